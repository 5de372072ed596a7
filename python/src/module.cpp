// The extension module skiff._skiff: datasets, loaders and their batches (the Python package's
// skiff/ wraps them). See handles.h for ownership and errors.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "handles.h"
#include "skiff/units.h"

namespace nb = nanobind;

namespace skiff::python {
namespace {

PyObject* error_type = nullptr;  // skiff.Error, created at import

}  // namespace

void ThrowIfError(const Status& status) {
  if (status.ok()) return;
  PyObject* type = error_type;
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      type = PyExc_ValueError;
      break;
    case StatusCode::kNotFound:
      type = PyExc_FileNotFoundError;
      break;
    case StatusCode::kResourceExhausted:
      type = PyExc_MemoryError;
      break;
    default:
      break;
  }
  PyErr_SetString(type, status.message().c_str());
  throw nb::python_error();
}

void CheckSameProcess(pid_t creator, const char* what) {
  if (getpid() == creator) return;
  PyErr_SetString(PyExc_RuntimeError,
                  (std::string(what) + " was created in process " + std::to_string(creator) +
                   " and cannot be used in process " + std::to_string(getpid()) +
                   " (after fork): its threads and I/O rings stay in the parent; create it in "
                   "the child (e.g. in a DataLoader's worker_init_fn) or use it in one process")
                      .c_str());
  throw nb::python_error();
}

}  // namespace skiff::python

NB_MODULE(_skiff, m) {
  m.doc() = "Skiff's engine: datasets on disk, the out-of-core loader and its batches";
  skiff::python::error_type = PyErr_NewExceptionWithDoc(
      "skiff.Error", "An error reported by Skiff's engine", PyExc_RuntimeError, nullptr);
  m.attr("Error") = nb::handle(skiff::python::error_type);
  m.def(
      "parse_bytes",
      [](const std::string& text) {
        uint64_t bytes = 0;
        if (!skiff::ParseBytes(text, &bytes)) {
          skiff::python::ThrowIfError(skiff::Status::InvalidArgument(
              "'" + text + "' is not a size (e.g. 4GiB, 512MiB, 1.5G or a byte count)"));
        }
        return bytes;
      },
      nb::arg("text"));
  m.def("format_bytes", &skiff::FormatBytes, nb::arg("bytes"));
  skiff::python::BindDataset(m);
  skiff::python::BindLoader(m);
  skiff::python::BindLinkLoader(m);
}
