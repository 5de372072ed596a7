// .npy / .npz reading: real .npy bytes built by hand (headers as numpy writes them), every dtype
// and byte order, malformed and truncated files, and .npz archives both stored and deflated.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <zip.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/half.h"
#include "skiff/io/npy.h"
#include "tests/unit/test_npy_util.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using namespace skiff::io;

using namespace skiff::testing;

namespace {

std::vector<float> ReadAllFloat(NpyReader& r) {
  std::vector<float> v(static_cast<size_t>(r.header().num_elements()));
  const Status st = r.ReadFloat(static_cast<int64_t>(v.size()), v.data());
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  return v;
}

std::vector<int64_t> ReadAllInt(NpyReader& r) {
  std::vector<int64_t> v(static_cast<size_t>(r.header().num_elements()));
  const Status st = r.ReadInt64(static_cast<int64_t>(v.size()), v.data());
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  return v;
}

}  // namespace

TEST_CASE("npy: every integer dtype in both byte orders converts to int64 and float") {
  testing::TempDir dir;
  struct Case {
    std::string descr;
    std::string data;
    std::vector<int64_t> expected;
  };
  const std::vector<Case> cases = {
      {"|b1", std::string("\x01\x00\x01", 3), {1, 0, 1}},
      {"|i1", Raw<int8_t>({-128, 0, 127}), {-128, 0, 127}},
      {"|u1", Raw<uint8_t>({0, 200, 255}), {0, 200, 255}},
      {"<i2", Raw<int16_t>({-300, 7, 32767}), {-300, 7, 32767}},
      {">i2", Raw<int16_t>({-300, 7, 32767}, true), {-300, 7, 32767}},
      {"<u2", Raw<uint16_t>({65535, 1, 2}), {65535, 1, 2}},
      {"<i4", Raw<int32_t>({-70000, 0, 70000}), {-70000, 0, 70000}},
      {">i4", Raw<int32_t>({-70000, 0, 70000}, true), {-70000, 0, 70000}},
      {"<u4", Raw<uint32_t>({4000000000u, 3, 4}), {4000000000LL, 3, 4}},
      {"<i8", Raw<int64_t>({-(int64_t{1} << 40), 5, 6}), {-(int64_t{1} << 40), 5, 6}},
      {">i8", Raw<int64_t>({-(int64_t{1} << 40), 5, 6}, true), {-(int64_t{1} << 40), 5, 6}},
      {">u8", Raw<uint64_t>({uint64_t{1} << 50, 0, 9}, true), {int64_t{1} << 50, 0, 9}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.descr);
    const std::string path = dir / "a.npy";
    WriteBytes(path, NpyBytes(c.descr, "(3,)", c.data));
    auto r = NpyReader::OpenFile(path);
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    CHECK((*r)->header().is_integer());
    CHECK((*r)->header().shape == std::vector<int64_t>{3});
    CHECK(ReadAllInt(**r) == c.expected);
    auto r2 = NpyReader::OpenFile(path);
    REQUIRE(r2.ok());
    const auto f = ReadAllFloat(**r2);
    for (size_t i = 0; i < 3; ++i)
      CHECK(f[i] == doctest::Approx(static_cast<double>(c.expected[i])));
  }
}

TEST_CASE("npy: float dtypes, both byte orders, 2-D C order, streamed in pieces") {
  testing::TempDir dir;
  const std::vector<float> values = {0.5f, -1.25f, 3.0f, 1e-3f, 42.0f, -0.0f};
  std::vector<uint16_t> halves;
  for (float v : values) halves.push_back(FloatToHalf(v));
  std::vector<double> doubles(values.begin(), values.end());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"<f4", Raw(values)},       {">f4", Raw(values, true)}, {"<f2", Raw(halves)},
      {">f2", Raw(halves, true)}, {"<f8", Raw(doubles)},      {">f8", Raw(doubles, true)},
  };
  for (const auto& [descr, data] : cases) {
    CAPTURE(descr);
    WriteBytes(dir / "f.npy", NpyBytes(descr, "(2, 3)", data));
    auto r = NpyReader::OpenFile(dir / "f.npy");
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    CHECK((*r)->header().shape == std::vector<int64_t>{2, 3});
    CHECK_FALSE((*r)->header().is_integer());
    std::vector<float> got(6);
    REQUIRE((*r)->ReadFloat(2, got.data()).ok());
    REQUIRE((*r)->ReadFloat(4, got.data() + 2).ok());
    CHECK((*r)->elements_read() == 6);
    for (size_t i = 0; i < 6; ++i) CHECK(got[i] == doctest::Approx(values[i]).epsilon(1e-3));
    // Past the end is refused.
    float extra;
    CHECK((*r)->ReadFloat(1, &extra).code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("npy: version 2.0 headers, scalars and integral floats as integers") {
  testing::TempDir dir;
  WriteBytes(dir / "v2.npy", NpyBytes("<i4", "(2,)", Raw<int32_t>({7, 8}), false, 2));
  auto r = NpyReader::OpenFile(dir / "v2.npy");
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK(ReadAllInt(**r) == std::vector<int64_t>{7, 8});

  WriteBytes(dir / "scalar.npy", NpyBytes("<i8", "()", Raw<int64_t>({99})));
  auto s = NpyReader::OpenFile(dir / "scalar.npy");
  REQUIRE(s.ok());
  CHECK((*s)->header().shape.empty());
  CHECK((*s)->header().num_elements() == 1);
  CHECK(ReadAllInt(**s) == std::vector<int64_t>{99});

  WriteBytes(dir / "intf.npy", NpyBytes("<f8", "(2,)", Raw<double>({3.0, -2.0})));
  auto fi = NpyReader::OpenFile(dir / "intf.npy");
  REQUIRE(fi.ok());
  CHECK(ReadAllInt(**fi) == std::vector<int64_t>{3, -2});

  WriteBytes(dir / "frac.npy", NpyBytes("<f4", "(2,)", Raw<float>({1.0f, 1.5f})));
  auto fr = NpyReader::OpenFile(dir / "frac.npy");
  REQUIRE(fr.ok());
  int64_t out[2];
  const Status st = (*fr)->ReadInt64(2, out);
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(st.message().find("element 1") != std::string::npos);
}

TEST_CASE("npy: malformed files give errors naming the file and the problem") {
  testing::TempDir dir;
  const std::string path = dir / "bad.npy";
  auto open_error = [&](const std::string& bytes) {
    WriteBytes(path, bytes);
    auto r = NpyReader::OpenFile(path);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find(path) != std::string::npos);
    return r.status();
  };
  const std::string ok_data = Raw<int32_t>({1, 2, 3});
  // Bad magic.
  std::string bytes = NpyBytes("<i4", "(3,)", ok_data);
  bytes[1] = 'X';
  Status st = open_error(bytes);
  CHECK(st.code() == StatusCode::kCorruption);
  CHECK(st.message().find("bad magic") != std::string::npos);
  // Shorter than the magic.
  st = open_error("\x93NU");
  CHECK(st.message().find("magic") != std::string::npos);
  // Unsupported version.
  bytes = NpyBytes("<i4", "(3,)", ok_data);
  bytes[6] = 9;
  st = open_error(bytes);
  CHECK(st.message().find("version 9") != std::string::npos);
  // Header longer than the file.
  st = open_error(NpyBytes("<i4", "(3,)", ok_data).substr(0, 30));
  CHECK(st.message().find("truncated .npy header") != std::string::npos);
  // Malformed dicts.
  for (const std::string shape : {"(3,", "3", "(a,)", "(-1,)"}) {
    CAPTURE(shape);
    st = open_error(NpyBytes("<i4", shape, ok_data));
    CHECK(st.code() == StatusCode::kCorruption);
    CHECK(st.message().find("malformed .npy header") != std::string::npos);
  }
  // Missing key / unknown key.
  {
    std::string dict = "{'descr': '<i4', 'shape': (3,), }";
    dict += std::string(64 - 10 - dict.size() - 1, ' ') + "\n";
    std::string b("\x93NUMPY\x01\x00", 8);
    b += static_cast<char>(dict.size());
    b += '\0';
    st = open_error(b + dict + ok_data);
    CHECK(st.message().find("lacks") != std::string::npos);
  }
  // Unsupported dtypes.
  for (const std::string descr : {"<U7", "|O8", "<c8", "<i3", "<f16", "zz"}) {
    CAPTURE(descr);
    st = open_error(NpyBytes(descr, "(3,)", ok_data));
    CHECK(st.message().find("unsupported dtype") != std::string::npos);
  }
  // Fortran order of a 2-D array.
  st = open_error(NpyBytes("<i4", "(3, 2)", Raw<int32_t>({1, 2, 3, 4, 5, 6}), true));
  CHECK(st.message().find("Fortran") != std::string::npos);
  // Truncated data: the shape promises more bytes than the file has.
  st = open_error(NpyBytes("<i4", "(4,)", ok_data));
  CHECK(st.code() == StatusCode::kCorruption);
  CHECK(st.message().find("truncated data") != std::string::npos);
  // Missing file.
  auto missing = NpyReader::OpenFile(dir / "nope.npy");
  CHECK(missing.status().code() == StatusCode::kNotFound);
}

TEST_CASE("npy: Fortran order is accepted for 1-D arrays") {
  testing::TempDir dir;
  WriteBytes(dir / "f1.npy", NpyBytes("<i4", "(3,)", Raw<int32_t>({4, 5, 6}), true));
  auto r = NpyReader::OpenFile(dir / "f1.npy");
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK(ReadAllInt(**r) == std::vector<int64_t>{4, 5, 6});
}

TEST_CASE(
    "npz: stored and deflated entries stream, list, and report missing entries and non-zip files") {
  testing::TempDir dir;
  std::vector<float> big(100000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 977) * 0.5f;
  const std::map<std::string, std::string> entries = {
      {"labels", NpyBytes("|i1", "(4,)", Raw<int8_t>({0, 3, -1, 2}))},
      {"big", NpyBytes("<f4", "(1000, 100)", Raw(big))},
  };
  for (bool deflate : {false, true}) {
    CAPTURE(deflate);
    const std::string path = dir / "g.npz";
    WriteNpz(path, entries, deflate);
    auto names = ListNpzEntries(path);
    REQUIRE(names.ok());
    std::vector<std::string> sorted = *names;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == std::vector<std::string>{"big", "labels"});

    auto labels = NpyReader::OpenNpzEntry(path, "labels.npy");
    REQUIRE_MESSAGE(labels.ok(), labels.status().ToString());
    CHECK((*labels)->source() == path + ":labels.npy");
    CHECK(ReadAllInt(**labels) == std::vector<int64_t>{0, 3, -1, 2});

    auto b = NpyReader::OpenNpzEntry(path, "big");
    REQUIRE(b.ok());
    std::vector<float> got(big.size());
    for (size_t at = 0; at < got.size(); at += 7919) {  // odd-sized pieces
      const auto n = static_cast<int64_t>(std::min<size_t>(7919, got.size() - at));
      REQUIRE((*b)->ReadFloat(n, got.data() + at).ok());
    }
    CHECK(got == big);

    auto missing = NpyReader::OpenNpzEntry(path, "features");
    CHECK(missing.status().code() == StatusCode::kNotFound);
    CHECK(missing.status().message().find("features.npy") != std::string::npos);
  }
  WriteBytes(dir / "notzip.npz", "this is not a zip archive at all");
  auto r = NpyReader::OpenNpzEntry(dir / "notzip.npz", "labels");
  CHECK_FALSE(r.ok());
  CHECK(r.status().message().find("notzip.npz") != std::string::npos);
  CHECK(ListNpzEntries(dir / "absent.npz").status().code() == StatusCode::kNotFound);
}

TEST_CASE("npz: a truncated entry is reported with the archive and entry name") {
  testing::TempDir dir;
  // The header promises 10 int32 values, the entry holds 3.
  const std::map<std::string, std::string> entries = {
      {"adj_indices", NpyBytes("<i4", "(10,)", Raw<int32_t>({1, 2, 3}))}};
  WriteNpz(dir / "t.npz", entries, true);
  auto r = NpyReader::OpenNpzEntry(dir / "t.npz", "adj_indices");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kCorruption);
  CHECK(r.status().message().find("t.npz:adj_indices.npy") != std::string::npos);
  CHECK(r.status().message().find("truncated") != std::string::npos);
}

TEST_CASE("npz: the shared cora.npz reads with the shapes its README gives") {
  const std::string datasets = testing::DatasetsDir();
  const std::string path = datasets + "/cora.npz";
  if (datasets.empty() || !std::filesystem::exists(path)) {
    MESSAGE("skipped: cora.npz not found");
    return;
  }
  auto labels = NpyReader::OpenNpzEntry(path, "labels");
  REQUIRE_MESSAGE(labels.ok(), labels.status().ToString());
  CHECK((*labels)->header().shape == std::vector<int64_t>{2708});
  const auto values = ReadAllInt(**labels);
  CHECK(*std::max_element(values.begin(), values.end()) == 6);
  auto shape = NpyReader::OpenNpzEntry(path, "attr_shape");
  REQUIRE(shape.ok());
  CHECK(ReadAllInt(**shape) == std::vector<int64_t>{2708, 1433});
  // Strings are refused with a clear message.
  auto names = NpyReader::OpenNpzEntry(path, "class_names");
  CHECK(names.status().message().find("unsupported dtype '<U22'") != std::string::npos);
}

TEST_CASE("npy: data that ends early while streaming is reported with the byte offset") {
  // A pipe has no size to check up front, so truncation surfaces in the middle of reading.
  TempDir dir;
  const std::string path = dir / "pipe.npy";
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  const std::string bytes = NpyBytes("<i4", "(5,)", Raw<int32_t>({1, 2, 3}));
  std::thread writer([&] { WriteBytes(path, bytes); });
  auto r = NpyReader::OpenFile(path);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  std::vector<int64_t> out(5);
  const Status st = (*r)->ReadInt64(5, out.data());
  writer.join();
  CHECK(st.code() == StatusCode::kCorruption);
  CHECK(st.message().find(path) != std::string::npos);
  CHECK_MESSAGE(st.message().find("truncated data (ends at byte " + std::to_string(bytes.size())) !=
                    std::string::npos,
                st.message());
}

TEST_CASE("npy: files written by numpy itself read back exactly, when numpy is available") {
  // Uses $SKIFF_PYTHON (default python3); skipped when it cannot import numpy.
  const char* env = std::getenv("SKIFF_PYTHON");
  const std::string python = env != nullptr ? env : "python3";
  if (std::system((python + " -c 'import numpy' >/dev/null 2>&1").c_str()) != 0) {
    MESSAGE("skipped: " << python << " has no numpy");
    return;
  }
  TempDir dir;
  // Values: (k % 97) - 40 for k in C order, cast to each dtype (unsigned types use k % 97).
  const std::vector<std::string> dtypes = {"bool", "int8", "<u2", ">i4", "<i8",
                                           ">u8",  "<f2",  ">f4", "<f8", ">f8"};
  const std::string script =
      "import numpy as np, sys\n"
      "d = sys.argv[1]\n"
      "dts = sys.argv[2].split(',')\n"
      "def vals(dt, shape):\n"
      "    k = np.arange(int(np.prod(shape))).reshape(shape) % 97\n"
      "    t = np.dtype(dt)\n"
      "    if t.kind == 'b': return (k % 2 == 1).astype(t)\n"
      "    if t.kind == 'u': return k.astype(t)\n"
      "    return (k - 40).astype(t)\n"
      "for i, dt in enumerate(dts):\n"
      "    np.save(f'{d}/a{i}.npy', vals(dt, (7, 5, 3)))\n"
      "np.savez(f'{d}/s.npz', x=vals('<i4', (1000,)), y=vals('<f4', (30, 40)))\n"
      "np.savez_compressed(f'{d}/c.npz', x=vals('<i4', (1000,)), y=vals('<f4', (30, 40)))\n"
      "np.save(f'{d}/scalar.npy', np.int64(-40))\n"
      "np.save(f'{d}/fortran.npy', np.asfortranarray(vals('<f4', (4, 6))))\n";
  std::ofstream(dir / "write.py") << script;
  std::string types;
  for (const auto& t : dtypes) types += (types.empty() ? "" : ",") + t;
  REQUIRE(std::system((python + " " + (dir / "write.py") + " " + dir.path() + " '" + types + "'")
                          .c_str()) == 0);

  auto expected = [](const std::string& dtype, int64_t k) -> int64_t {
    const int64_t m = k % 97;
    if (dtype == "bool") return m % 2;
    if (dtype.find('u') != std::string::npos) return m;
    return m - 40;
  };
  for (size_t i = 0; i < dtypes.size(); ++i) {
    CAPTURE(dtypes[i]);
    auto r = NpyReader::OpenFile(dir / ("a" + std::to_string(i) + ".npy"));
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    CHECK((*r)->header().shape == std::vector<int64_t>{7, 5, 3});
    const auto values = ReadAllInt(**r);
    int64_t wrong = 0;
    for (int64_t k = 0; k < 105; ++k)
      wrong += values[static_cast<size_t>(k)] != expected(dtypes[i], k);
    CHECK(wrong == 0);
  }
  for (const std::string archive : {"s.npz", "c.npz"}) {
    CAPTURE(archive);
    auto x = NpyReader::OpenNpzEntry(dir / archive, "x");
    REQUIRE_MESSAGE(x.ok(), x.status().ToString());
    const auto xs = ReadAllInt(**x);
    auto y = NpyReader::OpenNpzEntry(dir / archive, "y");
    REQUIRE(y.ok());
    CHECK((*y)->header().shape == std::vector<int64_t>{30, 40});
    const auto ys = ReadAllFloat(**y);
    int64_t wrong = 0;
    for (int64_t k = 0; k < 1000; ++k) wrong += xs[static_cast<size_t>(k)] != k % 97 - 40;
    for (int64_t k = 0; k < 1200; ++k) {
      wrong += ys[static_cast<size_t>(k)] != static_cast<float>(k % 97 - 40);
    }
    CHECK(wrong == 0);
  }
  auto scalar = NpyReader::OpenFile(dir / "scalar.npy");
  REQUIRE(scalar.ok());
  CHECK(ReadAllInt(**scalar) == std::vector<int64_t>{-40});
  auto fortran = NpyReader::OpenFile(dir / "fortran.npy");
  CHECK(fortran.status().message().find("Fortran") != std::string::npos);
}

TEST_CASE("npy: bytes after the data the shape describes are refused, as numpy refuses them") {
  TempDir dir;
  const std::string path = dir / "long.npy";
  WriteBytes(path, NpyBytes("<i4", "(3,)", Raw<int32_t>({1, 2, 3, 4})));
  auto r = NpyReader::OpenFile(path);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kCorruption);
  CHECK_MESSAGE(r.status().message().find(path + ": trailing data: shape needs 12 bytes") !=
                    std::string::npos,
                r.status().message());
  const std::map<std::string, std::string> entries = {
      {"labels", NpyBytes("<i4", "(3,)", Raw<int32_t>({1, 2, 3, 4}))}};
  WriteNpz(dir / "t.npz", entries, true);
  auto z = NpyReader::OpenNpzEntry(dir / "t.npz", "labels");
  REQUIRE_FALSE(z.ok());
  CHECK(z.status().message().find("t.npz:labels.npy: trailing data") != std::string::npos);
}

TEST_CASE("npz: an entry whose CRC-32 does not match is refused once it is read") {
  TempDir dir;
  const std::string path = dir / "t.npz";
  const std::string data = Raw<int32_t>({1, 2, 3, 4, 5, 6, 7, 8});
  WriteNpz(path, {{"labels", NpyBytes("<i4", "(8,)", data)}}, /*deflate=*/false);
  // Stored uncompressed: change one value in place, under the archive's CRC.
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t at = bytes.find(data);
  REQUIRE(at != std::string::npos);
  f.seekp(static_cast<std::streamoff>(at + 4));
  f.put('\x63');
  f.close();
  auto r = NpyReader::OpenNpzEntry(path, "labels");
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  std::vector<int64_t> out(8);
  const Status st = (*r)->ReadInt64(8, out.data());
  CHECK(st.code() == StatusCode::kCorruption);
  CHECK_MESSAGE(st.message().find("t.npz:labels.npy") != std::string::npos, st.message());
  CHECK_MESSAGE(st.message().find("CRC") != std::string::npos, st.message());
}
