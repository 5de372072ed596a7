#!/usr/bin/env python3
"""Checks that every #include in the library and the tool points down the layers.

    tools/check_layers.py [REPO_ROOT]

A file's layer is its folder (include/skiff/<layer>/, src/<layer>/, storage/, kernels/<cpu|cuda>/,
tools/skiff/; the headers directly in include/skiff/ and src/common/ are `base`). cmake/layers.txt
says which layers each one may include, directly or through the layers it may include; an include
of any other layer is an upward (or sideways) include, reported with the file and line, and the
script exits 1. The build enforces the same table (cmake/layers.txt) at compile time; this check
needs no build and names every offending line at once. Tests, fuzz targets and benchmark tools
may include anything.
"""
import os
import re
import sys


def read_layers(root):
    """cmake/layers.txt: each layer and the layers directly below it (the build reads it too)."""
    layers = {}
    with open(os.path.join(root, "cmake", "layers.txt"), encoding="utf-8") as f:
        for line in f:
            fields = line.split("#", 1)[0].split()
            if fields:
                layers[fields[0]] = fields[1:]
    return layers


LAYERS = {}  # read_layers(), filled by main()


def allowed(layer, memo={}):
    if layer not in memo:
        below = set()
        for dep in LAYERS[layer]:
            below |= {dep} | allowed(dep)
        memo[layer] = below
    return memo[layer]


def layer_of_file(path):
    parts = path.split("/")
    if parts[:2] == ["include", "skiff"]:
        return "base" if len(parts) == 3 else parts[2]
    if parts[0] == "src":
        return "base" if parts[1] == "common" else parts[1]
    if parts[0] == "storage":
        return "storage"
    if parts[0] == "kernels":
        return "kernels/" + parts[1]
    if parts[:2] == ["tools", "skiff"]:
        return "tools"
    return None


def layer_of_include(name):
    parts = name.split("/")
    if parts[0] == "skiff":
        return "base" if len(parts) == 2 else parts[1]
    if parts[0] == "kernels":
        return "kernels/" + parts[1]
    if parts[:2] == ["tools", "skiff"]:
        return "tools"
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    os.chdir(root)
    LAYERS.update(read_layers("."))
    problems = []
    checked = 0
    for top in ("include/skiff", "src", "storage", "kernels", "tools/skiff"):
        for folder, _, names in os.walk(top):
            for name in sorted(names):
                if not name.endswith((".h", ".cpp", ".cu", ".cuh")):
                    continue
                path = os.path.join(folder, name)
                layer = layer_of_file(path)
                if layer not in LAYERS:
                    problems.append(f"{path}: folder is not a layer; add it to cmake/layers.txt")
                    continue
                checked += 1
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                        if not m:
                            continue
                        target = layer_of_include(m.group(1))
                        if target is None or target == layer or target in allowed(layer):
                            continue
                        problems.append(f"{path}:{number}: {layer} includes {m.group(1)} "
                                        f"({target} is not below {layer})")
    for p in problems:
        print(p, file=sys.stderr)
    print(f"check_layers: {checked} files, {len(problems)} upward includes")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
