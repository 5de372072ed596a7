// NumPy / PyTorch arrays over C++ memory, without copies.
//
// Owned(): a vector moved into a capsule that frees it with the last array referencing it.
// View(): an array over memory that `owner` (a Python object) keeps alive.
// Either is returned as a NumPy array, or as a torch tensor through DLPack when `torch` is true
// (nanobind imports torch at run time; nothing links libtorch).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace skiff::python {

template <typename T>
nanobind::object View(T* data, std::initializer_list<size_t> shape, nanobind::handle owner,
                      bool torch) {
  if (torch) {
    return nanobind::cast(nanobind::ndarray<nanobind::pytorch, T>(data, shape, owner));
  }
  return nanobind::cast(nanobind::ndarray<nanobind::numpy, T>(data, shape, owner));
}

template <typename T>
nanobind::object Owned(std::vector<T>&& values, std::initializer_list<size_t> shape,
                       bool torch = false) {
  auto* held = new std::vector<T>(std::move(values));
  nanobind::capsule owner(held, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return View(held->data(), shape, owner, torch);
}

}  // namespace skiff::python
