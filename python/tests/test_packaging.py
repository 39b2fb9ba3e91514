# SPDX-License-Identifier: MIT
"""The package installs as docs/python.md says: `cmake --install` puts it
in the interpreter's site directory, and setuptools builds it against an
installed libhashring found by pkg-config, offline (pip without build
isolation, and python3 -m build, from Debian's packages).  The build tree
is installed under a temporary DESTDIR, which pkg-config follows (the .pc
file is relocatable) and the installed module's RPATH too ($ORIGIN)."""
import glob
import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

from conftest import ROOT

CHECK = ("import hashring; r = hashring.Ring([{'id': 'a', 'addr': 'h:1'}]); "
         "assert r.lookup('k').node == 'a'; print(hashring.__file__)")


@pytest.fixture(scope="module")
def installed(tmp_path_factory, sanitized):
    if sanitized:
        pytest.skip("packaging is checked in the plain build")
    build = os.environ.get("HASHRING_BUILD_DIR") or os.path.join(ROOT, "build")
    dest = tmp_path_factory.mktemp("destdir")
    subprocess.run(["cmake", "--install", build], check=True, stdout=subprocess.DEVNULL,
                   env=dict(os.environ, DESTDIR=str(dest)))
    libdir = os.path.dirname(glob.glob(str(dest) + "/**/libhashring.so", recursive=True)[0])
    return dest, libdir


def run_check(pythonpath):
    """Imports the package there and looks up: it finds its library by
    its RPATH alone (no LD_LIBRARY_PATH)."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env["PYTHONPATH"] = pythonpath
    r = subprocess.run([sys.executable, "-P", "-c", CHECK], env=env, check=True,
                       stdout=subprocess.PIPE, text=True, cwd="/")
    return r.stdout.strip()


def test_cmake_install(installed):
    dest, _ = installed
    site = str(dest) + sysconfig.get_paths()["platlib"]
    assert os.path.exists(os.path.join(site, "hashring", "__init__.pyi"))
    assert os.path.exists(os.path.join(site, "hashring", "py.typed"))
    assert run_check(site).startswith(site)


def source_copy(tmp_path):
    src = tmp_path / "python"
    shutil.copytree(os.path.join(ROOT, "python"), src,
                    ignore=shutil.ignore_patterns("tests", "build", "dist", "*.egg-info",
                                                  "__pycache__"))
    return src


def offline_env(libdir):
    return dict(os.environ, PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"),
                PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONPATH="")


def test_setuptools_wheel_and_pip(installed, tmp_path):
    _, libdir = installed
    src = source_copy(tmp_path)
    env = offline_env(libdir)
    subprocess.run([sys.executable, "-P", "-m", "build", "--no-isolation", "--wheel",
                    "--outdir", str(tmp_path / "dist"), str(src)], check=True, env=env,
                   stdout=subprocess.DEVNULL, cwd=str(tmp_path))
    wheels = os.listdir(tmp_path / "dist")
    assert len(wheels) == 1 and wheels[0].endswith("-cp311-abi3-linux_x86_64.whl"), wheels
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-P", "-m", "pip", "install", "--no-build-isolation",
                    "--no-index", "--target", str(target), str(src)], check=True, env=env,
                   stdout=subprocess.DEVNULL, cwd=str(tmp_path))
    assert run_check(str(target)).startswith(str(target))
    modules = glob.glob(str(target / "hashring" / "_hashring.abi3.so"))
    assert modules
    # Its RPATH is the library's directory, clean: not the .pc file's
    # <prefix>/lib/pkgconfig/../../lib.
    dyn = subprocess.run(["readelf", "-d", modules[0]], check=True, stdout=subprocess.PIPE,
                         text=True).stdout
    runpaths = [line.split("[", 1)[1].rstrip("]") for line in dyn.splitlines()
                if "(RUNPATH)" in line or "(RPATH)" in line]
    assert runpaths == [os.path.normpath(libdir)], runpaths
    assert os.path.exists(target / "hashring" / "__init__.pyi")
