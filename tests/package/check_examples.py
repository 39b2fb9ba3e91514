#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The programs of examples/, built as a user builds them and run against
a real etcd.

    check_examples.py SOURCE_DIR BUILD_DIR CC

hashring is installed from BUILD_DIR into a temporary prefix; examples/ is
built against that prefix with its CMakeLists.txt (find_package) and with
its Makefile (pkg-config), each with warnings as errors, and every program
must find the installed library with no LD_LIBRARY_PATH.  Then, against
an etcd on free loopback ports (python/tests/etcd_server.py: a temporary
directory, stopped by PID):

- lookup prints, for each key, the owners `hashring lookup` gives;
- service registers its node, warming, then makes it active; answers the
  keys on its stdin as `hashring lookup` does (its own node among the
  owners); logs ring changes; on SIGTERM turns the node draining, then
  exits 0 with its key gone from etcd.

Both builds' programs run.  Nothing is written into the source tree.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PREFIX = "/hashring/nodes/"
KEYS = ["user:%d" % i for i in range(40)]
WAIT_S = 20


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def run(argv, **kw):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=300, **kw)
    check(p.returncode == 0, "%s failed (%d):\n%s" % (" ".join(argv), p.returncode, p.stdout))
    return p.stdout


def wait_for(what, cond, timeout=WAIT_S):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise Fail("timed out waiting for " + what)


class Examples:
    def __init__(self, src, build, cc, work):
        self.src, self.build, self.cc, self.work = src, build, cc, work
        self.prefix = os.path.join(work, "prefix")
        self.etcd = None

    def install(self):
        run(["cmake", "--install", self.build, "--prefix", self.prefix])
        self.cli = os.path.join(self.prefix, "bin", "hashring")
        pcs = [os.path.join(d, "pkgconfig") for d, _, files in os.walk(self.prefix)
               if "libhashring.so" in files]
        check(len(pcs) == 1, "no single libhashring.so in the prefix: %s" % pcs)
        self.pkgconfig = pcs[0]
        self.libdir = os.path.dirname(pcs[0])

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items()
               if k not in ("LD_LIBRARY_PATH", "PKG_CONFIG_PATH", "CMAKE_PREFIX_PATH")}
        env.update(extra)
        return env

    def build_cmake(self):
        out = os.path.join(self.work, "cmake")
        run(["cmake", "-S", os.path.join(self.src, "examples"), "-B", out,
             "-DCMAKE_C_COMPILER=" + self.cc, "-DCMAKE_PREFIX_PATH=" + self.prefix,
             "-DCMAKE_C_FLAGS=-Wall -Wextra -Werror"], env=self.env())
        run(["cmake", "--build", out], env=self.env())
        return out

    def build_make(self):
        out = os.path.join(self.work, "make")
        shutil.copytree(os.path.join(self.src, "examples"), out)
        run(["make", "-C", out, "CC=" + self.cc, "CFLAGS=-O2 -Wall -Wextra -Werror"],
            env=self.env(PKG_CONFIG_PATH=self.pkgconfig))
        return out

    def check_loads_installed(self, exe):
        """ldd finds the prefix's libhashring.so, with no LD_LIBRARY_PATH,
        through an RPATH that is the library's directory as a clean path
        (not the .pc file's <prefix>/lib/pkgconfig/../../lib)."""
        dyn = run(["readelf", "-d", exe])
        paths = [line.split("[", 1)[1].rstrip("]") for line in dyn.splitlines()
                 if "(RUNPATH)" in line or "(RPATH)" in line]
        check(paths == [self.libdir], "%s records the RPATH %s, not %s"
              % (exe, paths, self.libdir))
        out = run(["ldd", exe], env=self.env())
        found = [line.split()[2] for line in out.splitlines()
                 if line.split()[:1] == ["libhashring.so.%s" % self.major()]
                 and len(line.split()) > 2]
        check(found and os.path.samefile(found[0], os.path.join(
            self.libdir, "libhashring.so." + self.major())),
              "%s does not load the installed library:\n%s" % (exe, out))

    def major(self):
        names = [f for f in os.listdir(self.libdir) if f.startswith("libhashring.so.")]
        return min(names, key=len)[len("libhashring.so."):]

    # ---- against etcd ----------------------------------------------------------

    def start_etcd(self):
        sys.path.insert(0, os.path.join(self.src, "python", "tests"))
        import etcd_server
        self.record = etcd_server.record
        self.etcd = etcd_server.Etcd().start()
        self.etcd.put(PREFIX + "cache-a", self.record("127.0.0.1:11211"))
        self.etcd.put(PREFIX + "cache-b", self.record("127.0.0.1:11212"))

    def expected(self):
        """{key: (node, addr, read_node, read_addr)} by the CLI, from etcd now."""
        out = run([self.cli, "lookup", "--endpoints", self.etcd.url, "--prefix", PREFIX,
                   "--json"] + KEYS, env=self.env())
        rows = [json.loads(line) for line in out.splitlines()]
        return {r["key"]: (r["node"], r["addr"], r["read_node"], r["read_addr"]) for r in rows}

    @staticmethod
    def answers(text):
        rows = [line.split("\t") for line in text.splitlines() if line]
        for r in rows:
            check(len(r) == 5, "not KEY NODE ADDR READ_NODE READ_ADDR: %r" % r)
        return {r[0]: tuple(r[1:]) for r in rows}

    def node_record(self, node):
        value = self.etcd.get_prefix(PREFIX).get(PREFIX + node)
        return json.loads(value) if value is not None else None

    def run_lookup(self, exe):
        p = subprocess.run([exe] + KEYS, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60,
                           env=self.env(HASHRING_ENDPOINTS=self.etcd.url))
        check(p.returncode == 0, "%s exited %d: %s" % (exe, p.returncode, p.stderr))
        got = self.answers(p.stdout)
        check(got == self.expected(), "%s answers\n%s\nnot as hashring lookup does" %
              (exe, p.stdout))

    def run_service(self, exe, node):
        err_path = os.path.join(self.work, node + ".stderr")
        with open(err_path, "w") as err:
            proc = subprocess.Popen([exe, node, "127.0.0.1:11213"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1,
                                    env=self.env(HASHRING_ENDPOINTS=self.etcd.url,
                                                 DRAIN_SECONDS="2"))
        try:
            self.service_session(proc, node, err_path)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def service_session(self, proc, node, err_path):
        def stderr():
            with open(err_path) as f:
                return f.read()

        # Registered, then active.
        wait_for(node + " active in etcd",
                 lambda: (self.node_record(node) or {}).get("state") == "active")
        wait_for("the service's ready line", lambda: "%s active at" % node in stderr())

        # Answers as the CLI does, once its ring has caught up with etcd.
        def answered():
            proc.stdin.write("".join(k + "\n" for k in KEYS))
            proc.stdin.flush()
            got = self.answers("".join(proc.stdout.readline() for _ in KEYS))
            return got == self.expected() and got
        got = wait_for(node + "'s answers to match hashring lookup's", answered)
        check(any(owner[0] == node for owner in got.values()),
              "no key of %d is %s's" % (len(KEYS), node))
        check("service: ring revision" in stderr(), "no ring change logged:\n" + stderr())

        # SIGTERM: draining, then gone.
        proc.send_signal(signal.SIGTERM)
        wait_for(node + " draining in etcd",
                 lambda: (self.node_record(node) or {}).get("state") == "draining")
        rc = proc.wait(WAIT_S)
        check(rc == 0, "service exited %d after SIGTERM:\n%s" % (rc, stderr()))
        check(self.node_record(node) is None, "%s is still in etcd after SIGTERM" % node)
        check("service: stopped" in stderr(), "no clean stop:\n" + stderr())


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: check_examples.py SOURCE_DIR BUILD_DIR CC")
    src, build, cc = sys.argv[1:]
    with tempfile.TemporaryDirectory(prefix="hashring-examples.") as work:
        ex = Examples(src, build, cc, work)
        try:
            ex.install()
            builds = {"find_package": ex.build_cmake(), "pkg-config": ex.build_make()}
            for how, out in builds.items():
                for prog in ("lookup", "service"):
                    ex.check_loads_installed(os.path.join(out, prog))
                print("ok: built with %s" % how)
            ex.start_etcd()
            for how, out in builds.items():
                ex.run_lookup(os.path.join(out, "lookup"))
                ex.run_service(os.path.join(out, "service"), "svc-" + how.replace("_", "-"))
                print("ok: lookup and service (%s) against etcd" % how)
        except Fail as e:
            print("FAIL: %s" % e)
            return 1
        finally:
            if ex.etcd:
                ex.etcd.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
