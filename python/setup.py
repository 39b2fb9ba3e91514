# SPDX-License-Identifier: MIT
"""Builds hashring._hashring against the installed libhashring.

pkg-config finds the library (hashring.pc, installed with its headers:
`cmake --install`); PKG_CONFIG_PATH points it elsewhere.  The extension
uses CPython's stable ABI (one abi3 module for Python 3.11 and later).
"""
import os
import subprocess

from setuptools import Extension, setup

SOURCES = ["module.c", "errors.c", "args.c", "ring.c", "client.c", "dispatch.c",
           "registrar.c", "acks.c", "aio.c"]


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "hashring"], check=True,
                             capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise SystemExit("hashring: pkg-config is needed to find libhashring "
                         "(apt-get install pkg-config)")
    except subprocess.CalledProcessError as e:
        raise SystemExit("hashring: libhashring not found by pkg-config ("
                         + e.stderr.strip() + "): build and install the library "
                         "first (docs/python.md, Install)")
    return out.split()


def strip(flags, prefix):
    return [f[len(prefix):] for f in flags if f.startswith(prefix)]


def dirs(flags, prefix):
    """The directories of -I or -L flags, normalised: the relocatable .pc
    file gives <prefix>/lib/pkgconfig/../../lib, which as an RPATH would
    only resolve while lib/pkgconfig exists."""
    return [os.path.normpath(d) for d in strip(flags, prefix)]


LIBRARY_DIRS = dirs(pkg_config("--libs-only-L"), "-L")

extension = Extension(
    "hashring._hashring",
    sources=["src/" + s for s in SOURCES],
    include_dirs=dirs(pkg_config("--cflags-only-I"), "-I"),
    library_dirs=LIBRARY_DIRS,
    # The library is found where it was at build time, without ldconfig
    # (cmake --install runs none) or LD_LIBRARY_PATH.
    runtime_library_dirs=LIBRARY_DIRS,
    libraries=strip(pkg_config("--libs-only-l"), "-l"),
    define_macros=[("_GNU_SOURCE", None)],
    extra_compile_args=["-std=c11"],
    py_limited_api=True,
)

setup(
    version=pkg_config("--modversion")[0],
    ext_modules=[extension],
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
