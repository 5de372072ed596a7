// ExportMetisGraph: writes a dataset's graph as a METIS graph file, for comparing GREM's cut with
// gpmetis's (`skiff partition --export-metis`). The counterpart of the METIS reader
// (convert/metis.h) on the way out.
//
// The file is 1-based and undirected, with self-loops and duplicate edges dropped and every row
// sorted. A dataset stored undirected (both directions of every edge) is streamed in chunks of
// rows, twice (O(chunk) memory): once to count the edges for the header, once to write the rows. A
// directed one is symmetrised in memory (O(E): its (min, max) pairs, sorted), as METIS requires.
// The file is written as PATH.tmp and renamed to PATH only when complete.
//
// Errors: those of opening and reading the dataset; InvalidArgument when a dataset stored
// undirected is not symmetric; IOError (disk full) naming the file.
//
// Thread safety: may run concurrently for different paths.
#pragma once

#include <string>

#include "skiff/status.h"

namespace skiff::partition {

Status ExportMetisGraph(const std::string& dataset_dir, const std::string& path);

}  // namespace skiff::partition
