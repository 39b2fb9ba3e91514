#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Checks that the deploy files parse, that they agree with the packages and
the docs, and that the real CLI accepts every hashring command they run.

    check_deploy.py SOURCE_DIR HASHRING_BINARY BUILD_DIR CPACK

No Docker engine or systemd instance runs here, so this is what can be
checked without one.  The project's .deb packages are made first (CPACK
with BUILD_DIR's CPackConfig.cmake) and unpacked into a temporary root:
they say where each file lands.

- docker-compose.yml, alone and with docker-compose.redis.yml merged in
  (its caches Redis servers, its rebalancer --backend redis), is YAML with
  three etcd members forming one cluster,
  two cache servers, one `hashring watch` that acknowledges its rings,
  two `hashring register` nodes, each announcing one of those servers, a
  `hashring agent` whose directory is on a named volume, and
  a step that promotes the nodes: they register `warming` and a `hashring
  rebalance --promote` (or `hashring state --id ID active`) runs once their
  health checks find their records in etcd, as docs/handoff.md teaches.
  All share one prefix and every etcd member.  One service builds the
  image (deploy/Dockerfile's runtime stage); the others run it by name.
  Published ports are on the loopback, away from the ports a local etcd
  (deploy/etcd-local.sh) takes, and docs/operators.md names them.
- deploy/Dockerfile is well formed: known instructions, Debian 12 stages,
  JSON-form commands, the build packages of deploy/install-deps.sh.  Its
  build stage makes the .deb packages; the runtime stage (the last)
  installs the CLI's package, whose Depends name a package for each shared
  library the CLI links, and what the compose file's health checks run; a
  "dev" stage installs the library's packages with a compiler and CMake and
  builds and runs the consumer programs of tests/package/consumer.
- deploy/hashring-register.service runs the path the hashring package
  installs the CLI at, under DynamicUser=yes, with the TLS client key
  passed as a credential (the dynamic user could not read it);
  `systemd-analyze verify` accepts it as it stands, the CLI taken from the
  unpacked package; its ExecStart, expanded with
  deploy/hashring-register.env as systemd would, is a valid command.
- every hashring command above (and each `docker compose exec SERVICE
  hashring ...` line of the compose file's header) passes the CLI's own
  parser (`hashring CMD ARGS... --help` exits 0 only if each option and
  value was accepted), each option and ETCDCTL_* variable is documented in
  `hashring CMD --help`, and each subcommand and option is one that the
  integration tests (tests/integration) run against a real etcd.
"""
import fnmatch
import glob
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

import yaml

RUN_TIMEOUT_S = 60
MAX_WORDS = 128


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def run(argv, env=None):
    """(exit status, stdout and stderr together); status -1 on a timeout."""
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           errors="replace", timeout=RUN_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return -1, "(killed after %d s)" % RUN_TIMEOUT_S
    return p.returncode, p.stdout


def option_value(argv, opt):
    """The value after `opt` in argv ("--opt V" or "--opt=V"), or None."""
    for i, word in enumerate(argv):
        if word == opt and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith(opt + "="):
            return word[len(opt) + 1:]
    return None


def duration_s(s):
    """"20s", "1m30s" or "40" (seconds) in seconds; -1 if not understood."""
    if not s or not re.fullmatch(r"(\d+[hms]?)+", s):
        return -1
    unit = {"": 1, "s": 1, "m": 60, "h": 3600}
    return sum(int(v) * unit[u] for v, u in re.findall(r"(\d+)([hms]?)", s))


def interpolate(s):
    """A compose value with its ${NAME:-default} and ${NAME-default} replaced
    by the defaults, as compose does with NAME unset; None for a ${NAME}
    without one."""
    out = re.sub(r"\$\{\w+:?-([^}]*)\}", r"\1", s)
    return None if "$" in out else out


def published_port(entry):
    """(host address, host port) of a compose `ports` entry in short form,
    "[IP:]HOST:CONTAINER"; the address is None when none is given."""
    text = interpolate(str(entry))
    check(text is not None, "port %s: a variable without a default" % entry)
    m = re.fullmatch(r"(?:([0-9.]+):)?(\d+):\d+(?:/tcp|/udp)?", text)
    check(m, "port %s: not IP:HOST:CONTAINER" % entry)
    return m.group(1), int(m.group(2))


def script_default(text, name):
    """The default of NAME=${VAR:-default} in a shell script, as an int."""
    m = re.search(r"^%s=\$\{\w+:-(\d+)\}" % name, text, re.M)
    check(m, "no default for %s" % name)
    return int(m.group(1))


def has_word(s, word):
    return word in s.split()


def is_true(value):
    return value in ("yes", "true", "on", "1")


class Packages:
    """The project's .deb packages, made with cpack and unpacked (dpkg -x)
    into one temporary root."""

    def __init__(self, build_dir, cpack, work):
        self.root = os.path.join(work, "root")
        out = os.path.join(work, "debs")
        rc, log = run([cpack, "--config", os.path.join(build_dir, "CPackConfig.cmake"),
                       "-B", out])
        check(rc == 0, "cpack failed: %s" % log[-2000:])
        self.debs = {}  # package name -> {"file", "depends", "paths"}
        for deb in sorted(glob.glob(os.path.join(out, "*.deb"))):
            rc, fields = run(["dpkg-deb", "-f", deb, "Package", "Depends"])
            check(rc == 0, "dpkg-deb -f %s: %s" % (deb, fields))
            info = dict(line.split(": ", 1) for line in fields.strip().split("\n"))
            rc, listing = run(["dpkg-deb", "-c", deb])
            check(rc == 0, "dpkg-deb -c %s: %s" % (deb, listing))
            rc, log = run(["dpkg", "-x", deb, self.root])
            check(rc == 0, "dpkg -x %s: %s" % (deb, log))
            paths = [line.split()[5][1:] for line in listing.strip().split("\n")]
            depends = [alt.split()[0] for dep in info.get("Depends", "").split(",")
                       for alt in dep.split("|") if alt.strip()]
            self.debs[info["Package"]] = {"file": os.path.basename(deb),
                                          "depends": depends, "paths": paths}
        check(self.debs, "cpack made no .deb")

    def holding(self, what, pattern):
        """The one package with a path matching `pattern` (a glob)."""
        names = [n for n, d in self.debs.items()
                 if any(fnmatch.fnmatch(p, pattern) for p in d["paths"])]
        check(len(names) == 1, "%d packages hold %s (%s), not one" % (len(names), what, pattern))
        return names[0]

    def path_of(self, name, pattern):
        paths = [p for p in self.debs[name]["paths"] if fnmatch.fnmatch(p, pattern)]
        check(len(paths) == 1, "%s holds %d paths like %s" % (name, len(paths), pattern))
        return paths[0]


class Checker:
    def __init__(self, root, cli, build_dir, cpack, work):
        self.root = root
        self.cli = cli
        self.build_dir = build_dir
        self.cpack = cpack
        self.work = work
        self._packages = None
        self._stages = None
        sources = sorted(glob.glob(os.path.join(root, "tests/integration/test_*.c")))
        self.tests = "\n".join(open(p, encoding="utf-8").read() for p in sources)

    def path(self, rel):
        return os.path.join(self.root, rel)

    def read(self, rel):
        with open(self.path(rel), encoding="utf-8") as f:
            return f.read()

    def packages(self):
        """Made once, on first use."""
        if self._packages is None:
            self._packages = Packages(self.build_dir, self.cpack, self.work)
        return self._packages

    def cli_package(self):
        """(name, path) of the package that installs the CLI."""
        pkgs = self.packages()
        name = pkgs.holding("the CLI", "*/bin/hashring")
        return name, pkgs.path_of(name, "*/bin/hashring")

    # ---- the CLI check shared by every deploy file ------------------------

    @staticmethod
    def help_lists(help_text, opt):
        """True when the help lists option `opt` ("  --name ARG  text" or a
        flag alone on its line)."""
        return re.search(r"(?<=  )%s(?=[ \n])" % re.escape(opt), help_text) is not None

    @staticmethod
    def help_default(help_text, opt):
        """The "(... default X)" that the help gives option `opt`, or None."""
        entry = re.search(r"^  %s .*?(?=^  -|\Z)" % re.escape(opt), help_text, re.M | re.S)
        m = entry and re.search(r"default\s+([^;)\s]+)\)", entry.group(0))
        return m.group(1) if m else None

    def cli_command(self, where, argv, env_names):
        """argv is a hashring command line as a deploy file runs it (argv[0]
        "hashring" or a path ending in "/hashring"); env_names the variables
        the file gives it.  Returns `hashring CMD --help`."""
        check(len(argv) >= 2, "%s: no subcommand" % where)
        check(os.path.basename(argv[0]) == "hashring",
              "%s: runs %s, not hashring" % (where, argv[0]))
        cmd = argv[1]
        rc, help_text = run([self.cli, cmd, "--help"])
        check(rc == 0, "%s: hashring %s --help failed: %s" % (where, cmd, help_text))
        check('"%s"' % cmd in self.tests,
              "%s: no integration test runs `hashring %s`" % (where, cmd))
        for word in argv[2:]:
            if not word.startswith("--"):
                continue
            opt = word.split("=", 1)[0]
            check(self.help_lists(help_text, opt),
                  "%s: `hashring %s --help` does not list %s" % (where, cmd, opt))
            check('"%s"' % opt in self.tests,
                  "%s: no integration test passes %s" % (where, opt))
        for name in env_names:
            if name.startswith("ETCDCTL_"):
                check("$" + name in help_text,
                      "%s: hashring %s does not read %s" % (where, cmd, name))
        # The parser itself: each option and value is checked as it comes,
        # so --help at the end exits 0 only if all of them were accepted.
        check(len(argv) <= MAX_WORDS, "%s: more than %d words" % (where, MAX_WORDS))
        rc, out = run([self.cli] + argv[1:] + ["--help"])
        check(rc == 0, "%s: the CLI rejects its command: %s" % (where, out))
        return help_text

    def checker_rejects_bad_commands(self):
        """The checker itself rejects what the CLI rejects."""
        rc, _ = run([self.cli, "register", "--bogus", "--help"])
        check(rc == 2, "register --bogus --help exited %d, not 2" % rc)
        rc, _ = run([self.cli, "register", "--ttl", "1", "--help"])
        check(rc == 2, "register --ttl 1 --help exited %d, not 2" % rc)
        for text, want in (("1m30s", 90), ("20s", 20), ("40", 40), ("x", -1)):
            check(duration_s(text) == want, "duration_s(%r) is %d" % (text, duration_s(text)))
        for entry, want in (("127.0.0.1:${P:-23790}:2379", ("127.0.0.1", 23790)),
                            ("2379:2379", (None, 2379))):
            check(published_port(entry) == want, "published_port(%r)" % entry)
        check(interpolate("${P}") is None, "interpolate() takes ${P} without a default")
        _, help_text = run([self.cli, "register", "--help"])
        check(self.help_default(help_text, "--state") == "warming",
              "help_default() misreads register's --state")

    # ---- docker-compose.yml -------------------------------------------------

    @staticmethod
    def service_command(name, svc):
        """A service's command as a word list (list form, or a string split
        on blanks)."""
        cmd = svc.get("command")
        if isinstance(cmd, str):
            return cmd.split()
        check(isinstance(cmd, list), "service %s has no command" % name)
        for word in cmd:
            check(isinstance(word, str), "%s: command items must be strings" % name)
        return list(cmd)

    @staticmethod
    def service_env(svc):
        """A service's environment (mapping or list of NAME=VALUE) as a dict."""
        env = svc.get("environment") or {}
        if isinstance(env, dict):
            return {k: v for k, v in env.items()}
        return dict(item.split("=", 1) if "=" in item else (item, None) for item in env)

    @staticmethod
    def etcd_setting(svc, argv, flag):
        """The etcd setting `flag` of a member, from its command line or its
        ETCD_* variable."""
        v = option_value(argv, "--" + flag)
        if v is not None:
            return v
        v = Checker.service_env(svc).get("ETCD_" + flag.replace("-", "_").upper())
        return v if isinstance(v, str) else None

    @staticmethod
    def depends(svc, name, condition):
        """True when the service waits for `name` to reach `condition`
        (the list form of depends_on means service_started)."""
        deps = svc.get("depends_on") or {}
        if isinstance(deps, list):
            return name in deps and condition == "service_started"
        entry = deps.get(name)
        if entry is None:
            return False
        got = entry.get("condition", "service_started") if isinstance(entry, dict) else None
        return got == condition

    @staticmethod
    def health_command(name, svc):
        """The words of a service's health check: ["CMD", ...] as they are,
        ["CMD-SHELL", "..."] split as sh would (pipes kept as words)."""
        hc = svc.get("healthcheck")
        check(isinstance(hc, dict), "service %s has no healthcheck" % name)
        test = hc.get("test")
        check(isinstance(test, list) and len(test) >= 2 and
              test[0] in ("CMD", "CMD-SHELL"),
              "service %s: healthcheck test is not [CMD, ...] or [CMD-SHELL, ...]" % name)
        if test[0] == "CMD":
            return test[1:]
        check(len(test) == 2, "service %s: CMD-SHELL takes one string" % name)
        lex = shlex.shlex(test[1], posix=True, punctuation_chars="|&;")
        lex.whitespace_split = True
        return list(lex)

    def compose(self, override=None):
        """(text, services, commands, kinds) of docker-compose.yml, with
        the services of the file `override` merged in (each key it gives
        replaces the main file's, as compose does for these): kinds maps
        each service to the program its command runs."""
        text = self.read("docker-compose.yml")
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise Fail("docker-compose.yml is not valid YAML: %s" % e)
        check(isinstance(doc, dict), "compose file is not a mapping")
        services = doc.get("services")
        check(isinstance(services, dict), "no services mapping")
        if override:
            try:
                over = yaml.safe_load(self.read(override))
            except yaml.YAMLError as e:
                raise Fail("%s is not valid YAML: %s" % (override, e))
            check(isinstance(over, dict) and isinstance(over.get("services"), dict),
                  "%s has no services mapping" % override)
            for name, svc in over["services"].items():
                check(name in services, "%s: service %s is not in docker-compose.yml"
                      % (override, name))
                services[name] = dict(services[name], **svc)
        commands = {name: self.service_command(name, svc) for name, svc in services.items()}
        kinds = {}
        for name, argv in commands.items():
            check(argv, "service %s has no command" % name)
            kinds[name] = os.path.basename(argv[0])
        return text, services, commands, kinds

    def compose_file_redis(self):
        """The Redis variant, merged into the main file: the same checks."""
        self.compose_file("docker-compose.redis.yml")

    def compose_file(self, override=None):
        text, services, commands, kinds = self.compose(override)
        stages = self.dockerfile_stages()

        etcd_names, cluster = [], None
        for name, svc in services.items():
            argv = commands[name]
            if kinds[name] != "etcd":
                continue
            image = svc.get("image")
            member = self.etcd_setting(svc, argv, "name")
            ic = self.etcd_setting(svc, argv, "initial-cluster")
            adv = self.etcd_setting(svc, argv, "advertise-client-urls")
            # Debian 12's etcd version, as the tests use.
            check(isinstance(image, str) and "etcd:v3.4.23" in image,
                  "%s: not etcd 3.4.23" % name)
            check(member == name, "%s: member name differs from the service name" % name)
            check(ic, "%s: no initial cluster" % name)
            cluster = cluster or ic
            check(ic == cluster, "%s: initial cluster %s, not %s" % (name, ic, cluster))
            check(adv and name in adv, "%s: advertises %s" % (name, adv or "nothing"))
            etcd_names.append(name)

        # The caches, memcached or Redis servers: the address clients reach
        # each one at.
        caches, stores = {}, set()
        for name, svc in services.items():
            if kinds[name] == "memcached":
                # Debian 12's memcached version, as the handoff suites use.
                check(svc.get("image") == "memcached:1.6.18",
                      "%s: not memcached 1.6.18" % name)
                port = option_value(commands[name], "-p") or \
                    option_value(commands[name], "--port")
                caches["%s:%s" % (name, port or "11211")] = name
                stores.add("memcached")
            elif kinds[name] == "redis-server":
                # Debian 12's redis-server version, as test_handoff_redis uses.
                check(svc.get("image") == "redis:7.0.15", "%s: not redis 7.0.15" % name)
                port = option_value(commands[name], "--port")
                caches["%s:%s" % (name, port or "6379")] = name
                stores.add("redis")
        check(len(stores) == 1, "the caches are %s: not one kind"
              % (", ".join(sorted(stores)) or "none"))
        store = stores.pop()

        # The hashring services: one image, built by exactly one of them.
        hashring = [n for n in services if kinds[n] == "hashring"]
        check(hashring, "no hashring service")
        image = services[hashring[0]].get("image")
        builders = [n for n in hashring if "build" in services[n]]
        check(len(builders) == 1,
              "%d hashring services build the image (%s), not one: the others run it "
              "by its image name" % (len(builders), ", ".join(builders)))
        build = services[builders[0]]["build"]
        check(isinstance(build, dict) and build.get("context") == "." and
              build.get("dockerfile") == "deploy/Dockerfile",
              "%s: not built from deploy/Dockerfile in the top directory" % builders[0])
        check(build.get("target") in (None, stages[-1]["name"]),
              "%s: builds stage %s, not the runtime stage %s"
              % (builders[0], build.get("target"), stages[-1]["name"]))
        for name in hashring:
            check(isinstance(image, str) and services[name].get("image") == image,
                  "service %s: image %s, not %s" % (name, services[name].get("image"), image))

        prefix, registered, watchers, promoted, waits = None, {}, {}, {}, {}
        for name in hashring:
            svc, argv = services[name], commands[name]
            where = "docker-compose.yml service %s" % name
            env = self.service_env(svc)
            help_text = self.cli_command(where, argv, list(env))

            # Every hashring service shares one ring: same prefix.
            p = option_value(argv, "--prefix")
            check(p, "%s: no --prefix" % where)
            prefix = prefix or p
            check(p == prefix, "%s: prefix %s, not %s" % (where, p, prefix))
            # ...and the etcd members of this file, started first.
            eps = option_value(argv, "--endpoints") or env.get("ETCDCTL_ENDPOINTS")
            check(eps, "%s: no endpoints" % where)
            for member in etcd_names:
                url = "http://%s:2379" % member
                check(url in eps, "%s: endpoints lack %s" % (where, url))
                check(self.depends(svc, member, "service_healthy"),
                      "%s: does not wait for %s to be healthy" % (where, member))
            ack_prefix = option_value(argv, "--ack-prefix") or \
                self.help_default(help_text, "--ack-prefix")

            if argv[1] == "watch":
                client = option_value(argv, "--client-id")
                if client:
                    watchers[name] = ack_prefix
            elif argv[1] == "register":
                node = option_value(argv, "--id")
                drain = option_value(argv, "--drain-seconds")
                grace = svc.get("stop_grace_period")
                sig = svc.get("stop_signal")
                check(node, "%s: no --id" % where)
                check(node not in registered.values(), "%s: id %s used twice" % (where, node))
                registered[name] = node
                # docker stop must let the drain finish.
                check(sig is None or sig == "SIGTERM", "%s: stop_signal is not SIGTERM" % where)
                check(isinstance(grace, str) and
                      duration_s(grace) > (int(drain) if drain else 0) + 2,
                      "%s: stop_grace_period too short for the drain" % where)
                # A node joins warming (docs/handoff.md): clients write to
                # it while the rebalancer fills it, and a step promotes it.
                state = option_value(argv, "--state") or self.help_default(help_text, "--state")
                check(state == "warming", "%s: registers %s, not warming" % (where, state))
                # It announces a memcached server of this file, started first.
                addr = option_value(argv, "--addr")
                check(addr in caches, "%s: --addr %s is no cache service of this file"
                      % (where, addr))
                check(self.depends(svc, caches[addr], "service_started"),
                      "%s: does not wait for %s" % (where, caches[addr]))
                # Healthy once its record is in etcd, so that what promotes
                # it can wait for it.
                words = self.health_command(name, svc)
                check(words[0] == "etcdctl" and "get" in words and prefix + node in words,
                      "%s: the health check does not get %s%s with etcdctl"
                      % (where, prefix, node))
            elif argv[1] == "rebalance":
                check("--promote" in argv, "%s: rebalance without --promote" % where)
                backend = option_value(argv, "--backend") or \
                    self.help_default(help_text, "--backend")
                check(backend == store, "%s: backend %s, and the caches are %s"
                      % (where, backend, store))
                # It waits for acks: checked below, once every watcher is known.
                waits[name] = (int(option_value(argv, "--clients") or
                                   self.help_default(help_text, "--clients")), ack_prefix)
                promoted[name] = option_value(argv, "--id")
            elif argv[1] == "agent":
                # Its directory on a named volume, which readers mount.
                d = option_value(argv, "--dir") or self.help_default(help_text, "--dir")
                mounts = [v.split(":") for v in svc.get("volumes", []) if isinstance(v, str)]
                check(any(len(m) >= 2 and m[0] in (yaml.safe_load(text).get("volumes") or {}) and
                          (d + "/").startswith(m[1].rstrip("/") + "/") for m in mounts),
                      "%s: --dir %s is on no named volume" % (where, d))
            elif argv[1] == "state":
                check("active" in argv[2:], "%s: state is not `active`" % where)
                promoted[name] = option_value(argv, "--id")
                check(promoted[name], "%s: state without --id" % where)
            else:
                check(False, "%s: runs hashring %s" % (where, argv[1]))
        check(len(etcd_names) == 3, "%d etcd members, not 3" % len(etcd_names))
        check(len(watchers) == len([n for n in hashring if commands[n][1] == "watch"]) == 1,
              "not one watch service, acknowledging with --client-id")
        check(len(registered) == 2, "%d register services, not 2" % len(registered))
        check(len(caches) == len(registered),
              "%d cache services for %d nodes" % (len(caches), len(registered)))
        # A rebalancer waits for at least one acknowledging client (else
        # its wait, and the handoff's guarantee, is void), started first.
        for name, (clients, ack_prefix) in waits.items():
            acking = [w for w, a in watchers.items() if a == ack_prefix]
            check(1 <= clients <= len(acking),
                  "service %s: --clients %d, and %d watchers acknowledge under %s"
                  % (name, clients, len(acking), ack_prefix))
            for w in acking:
                check(self.depends(services[name], w, "service_started"),
                      "service %s does not wait for %s" % (name, w))
        # Each node is promoted by a step that waits until the node's record
        # is there (a rebalance before it would find nothing warming) and
        # that is retried while it fails.
        for reg, node in registered.items():
            by = [p for p, only in promoted.items() if only in (None, node)]
            check(by, "nothing promotes %s: it stays warming" % node)
            for p in by:
                check(self.depends(services[p], reg, "service_healthy"),
                      "service %s does not wait for %s to be healthy" % (p, reg))
                check(services[p].get("restart") == "on-failure",
                      "service %s is not restarted on failure" % p)
        # One cluster of exactly these three members.
        for member in etcd_names:
            entry = "%s=http://%s:2380" % (member, member)
            check(entry in cluster, "initial cluster lacks %s" % entry)
        check(cluster.count(",") == len(etcd_names) - 1,
              "initial cluster %s has other members" % cluster)

        # Published ports: loopback only, never one that a local etcd
        # started by deploy/etcd-local.sh (one member or three) listens on,
        # and named in the operators' guide.
        local = self.read("deploy/etcd-local.sh")
        client, peer, step = (script_default(local, n)
                              for n in ("CLIENT_PORT", "PEER_PORT", "PORT_STEP"))
        taken = {base + i * step for base in (client, peer) for i in range(3)}
        guide = self.read("docs/operators.md")
        for name, svc in services.items():
            for entry in svc.get("ports") or []:
                addr, port = published_port(entry)
                check(addr == "127.0.0.1", "%s: port %s is not on 127.0.0.1" % (name, entry))
                check(port not in taken, "%s: host port %d is one a local etcd takes (%s)"
                      % (name, port, ", ".join(str(p) for p in sorted(taken))))
                check("%s:%d" % (addr, port) in guide,
                      "docs/operators.md does not name %s:%d (%s)" % (addr, port, name))

        # The commands the header tells the reader to run (up to two blanks,
        # which start a remark).
        if override:
            return
        pattern = r"^#.*docker compose exec (\S+) (hashring\b[^`]*?)(?:\s{2,}.*)?$"
        for m in re.finditer(pattern, text, re.M):
            name, argv = m.group(1), m.group(2).split()
            check(name in hashring, "the header runs hashring in %s, which does not run "
                  "the hashring image" % name)
            self.cli_command("docker-compose.yml header", argv,
                             list(self.service_env(services[name])))

    # ---- deploy/Dockerfile --------------------------------------------------

    KNOWN = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY",
             "ENTRYPOINT", "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD",
             "STOPSIGNAL", "HEALTHCHECK", "SHELL"}

    @staticmethod
    def parse_dockerfile(text):
        """[(keyword, args, stage)]: continuation lines joined, comments
        removed; stage is the index of the FROM it belongs to (-1 before)."""
        out, stage, cur = [], -1, None
        for line in text.split("\n"):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            cont = line.endswith("\\")
            if cont:
                line = line[:-1]
            cur = line if cur is None else cur + " " + line
            if cont:
                continue
            keyword, args = re.match(r"(\S*)\s*(.*)", cur).groups()
            check(0 < len(keyword) < 16, "bad line: %s" % cur)
            keyword = keyword.upper()
            if keyword == "FROM":
                stage += 1
            out.append((keyword, args.strip(), stage))
            cur = None
        check(cur is None, "Dockerfile ends inside a continued line")
        return out

    def dockerfile_stages(self):
        """The Dockerfile's stages, checked for form, in order: each a dict
        with its name, image, RUN texts, COPY --from (stage, source) pairs,
        plain COPY sources, and CMD."""
        if self._stages is not None:
            return self._stages
        ins = self.parse_dockerfile(self.read("deploy/Dockerfile"))
        check(ins, "deploy/Dockerfile has no instructions")
        check(ins[0][0] in ("FROM", "ARG"),
              "a Dockerfile starts with FROM or ARG, not %s" % ins[0][0])
        defaults, stages = {}, []
        for kw, args, stage in ins:
            check(kw in self.KNOWN, "unknown instruction %s" % kw)
            check(args, "%s without arguments" % kw)
            if stage < 0:
                check(kw == "ARG", "%s before the first FROM" % kw)
                if "=" in args:
                    name, value = args.split("=", 1)
                    defaults[name] = value.split()[0]
                continue
            if kw == "FROM":
                words = args.split()
                image = words[0]
                # ${NAME} images come from the ARGs before the first FROM.
                m = re.fullmatch(r"\$\{(\w+)\}", image)
                if m:
                    check(m.group(1) in defaults, "FROM %s: no ARG default" % image)
                    image = defaults[m.group(1)]
                check(image.startswith("debian:12") or image.startswith("debian:bookworm"),
                      "stage %d is not Debian 12: %s" % (stage, image))
                check(len(words) == 3 and words[1].lower() == "as",
                      "FROM %s: stages are named here (FROM IMAGE AS NAME)" % args)
                check(words[2] not in [s["name"] for s in stages],
                      "two stages named %s" % words[2])
                stages.append({"name": words[2], "image": image, "runs": [],
                               "copies_from": [], "copies": [], "cmd": None})
                continue
            cur = stages[-1]
            if kw == "COPY" and args.startswith("--from="):
                words = args[len("--from="):].split()
                check(words[0] in [s["name"] for s in stages[:-1]],
                      "COPY --from=%s: no earlier stage of that name" % words[0])
                cur["copies_from"] += [(words[0], src) for src in words[1:-1]]
            elif kw == "COPY":
                cur["copies"] += args.split()[:-1]
            elif kw == "RUN":
                cur["runs"].append(args)
            elif kw in ("CMD", "ENTRYPOINT", "SHELL"):
                if args.startswith("[") or kw == "SHELL":
                    try:
                        arr = json.loads(args)
                    except ValueError:
                        arr = None
                    check(isinstance(arr, list) and arr and
                          all(isinstance(w, str) for w in arr),
                          "%s: not a JSON array of strings: %s" % (kw, args))
                if kw == "CMD":
                    cur["cmd"] = args
            elif kw == "STOPSIGNAL":
                check(args == "SIGTERM", "STOPSIGNAL %s" % args)
        check(len(stages) >= 2, "not a multi-stage build")
        self._stages = stages
        return stages

    @staticmethod
    def package_of(path_glob):
        """The Debian package that ships a file matching `path_glob`, or None."""
        rc, out = run(["/usr/bin/dpkg", "-S", path_glob])
        return out.split(":", 1)[0] if rc == 0 else None

    @staticmethod
    def installs_debs(stage, pkgs):
        """The project's packages whose .deb files the stage's apt-get
        install lines name (by a path with a glob)."""
        words = [w for run_text in stage["runs"] if "apt-get install" in run_text
                 for w in run_text.split() if w.endswith(".deb")]
        return {name for name, deb in pkgs.debs.items()
                if any(fnmatch.fnmatch(deb["file"], os.path.basename(w)) for w in words)}

    def dockerfile(self):
        stages = self.dockerfile_stages()
        pkgs = self.packages()

        # The stage that makes the packages, with Debian's packages only:
        # apt-get, and no other fetcher.
        makers = [s for s in stages if any("cpack" in r for r in s["runs"])]
        check(len(makers) == 1, "%d stages run cpack, not one" % len(makers))
        build = makers[0]
        build_text = " ".join(build["runs"])
        check("apt-get install" in build_text, "the build stage runs no apt-get install")
        check("cmake --build" in build_text, "the build stage runs no cmake --build")
        for fetcher in ("curl ", "wget ", "git clone"):
            check(fetcher not in build_text, "the build stage runs %s" % fetcher)
        m = re.search(r"cpack\b[^&;]*?-B\s+(\S+)", build_text)
        check(m, "the build stage's cpack names no package directory (-B DIR)")
        deb_dir = m.group(1).rstrip("/")
        # Every build package install-deps.sh names (its PACKAGES list), a
        # -dev one or a tool.
        m = re.search(r'^PACKAGES="([^"]*)"', self.read("deploy/install-deps.sh"), re.M)
        check(m, "deploy/install-deps.sh has no PACKAGES list")
        for pkg in m.group(1).split():
            if "-dev" in pkg or pkg in ("cmake", "pkg-config"):
                check(has_word(build_text, pkg), "the build stage does not install %s" % pkg)

        def takes_debs(stage, want):
            check(any(src == build["name"] and p.startswith(deb_dir + "/")
                      for src, p in stage["copies_from"]),
                  "stage %s copies nothing from %s's %s" % (stage["name"], build["name"], deb_dir))
            got = self.installs_debs(stage, pkgs)
            for name in want:
                check(name in got, "stage %s does not install the %s package" % (stage["name"], name))
            return got

        # The runtime stage, the last (what `docker build` and the compose
        # file give by default): the CLI's package, nothing to build with.
        cli, cli_path = self.cli_package()
        dev = pkgs.holding("the headers", "*/include/hashring.h")
        lib = pkgs.holding("the shared library", "*/libhashring.so.[0-9]*")
        runtime = stages[-1]
        got = takes_debs(runtime, [cli])
        check(dev not in got, "the runtime stage installs %s" % dev)
        check(runtime["cmd"] and '"hashring"' in runtime["cmd"], "the image's CMD is not hashring")
        runtime_text = " ".join(runtime["runs"])
        # apt brings the libraries the CLI links through the package's
        # Depends (libc comes with the base image).
        rc, out = run(["/usr/bin/readelf", "-d", self.cli])
        check(rc == 0, "readelf -d %s: %s" % (self.cli, out))
        libs = 0
        for soname in re.findall(r"Shared library: \[([^\]]*)\]", out):
            if soname.startswith(("libc.so", "libm.so", "ld-linux", "libasan",
                                  "libubsan", "libtsan")):
                continue
            pkg = self.package_of("*/" + soname)
            check(pkg, "no Debian package ships %s" % soname)
            check(pkg in pkgs.debs[cli]["depends"],
                  "the %s package does not depend on %s (for %s)" % (cli, pkg, soname))
            libs += 1
        check(libs > 0, "the CLI links no library a package ships")
        # What the compose file's health checks run (etcdctl), unless the
        # base image has it (an Essential package such as grep).
        _, services, _, kinds = self.compose()
        seps = ("|", "&&", "||", ";")
        for words in [self.health_command(n, svc) for n, svc in services.items()
                      if kinds[n] == "hashring" and "healthcheck" in svc]:
            programs = [w for i, w in enumerate(words)
                        if w not in seps and (i == 0 or words[i - 1] in seps)]
            for word in programs:
                pkg = self.package_of("/usr/bin/" + word) or self.package_of("/bin/" + word)
                check(pkg, "no Debian package ships %s (a compose health check runs it)" % word)
                rc, essential = run(["dpkg-query", "-W", "-f=${Essential}", pkg])
                check(essential.strip() == "yes" or has_word(runtime_text, pkg),
                      "the runtime stage lacks %s (for %s, which a compose health check runs)"
                      % (pkg, word))

        # The "dev" stage: the library's packages, a compiler and CMake, and
        # the proof that programs build against them.
        devs = [s for s in stages if s["name"] == "dev"]
        check(devs, "no stage named dev (the library and headers, for embedding)")
        dev_stage = devs[0]
        takes_debs(dev_stage, [lib, dev])
        dev_text = " ".join(dev_stage["runs"])
        for pkg in ("build-essential", "cmake"):
            check(has_word(dev_text, pkg), "the dev stage does not install %s" % pkg)
        check(any(src.rstrip("/") == "tests/package/consumer" for src in dev_stage["copies"]),
              "the dev stage does not copy tests/package/consumer")
        consumer = self.read("tests/package/consumer/CMakeLists.txt")
        programs = re.findall(r"^add_executable\((\w+)", consumer, re.M)
        check(programs, "tests/package/consumer builds no program")
        for prog in programs:
            check(re.search(r"(^|&&)\s*\S*/%s(\s|$)" % prog, dev_text),
                  "the dev stage does not run %s" % prog)
        check("pkg-config --cflags --libs hashring" in dev_text,
              "the dev stage builds nothing with pkg-config")

    # ---- deploy/hashring-register.service ------------------------------------

    def load_env_file(self, rel):
        """NAME=VALUE lines (comments and blanks skipped), as a dict."""
        env = {}
        for line in self.read(rel).split("\n"):
            line = line.lstrip()
            if not line or line.startswith("#"):
                continue
            name, eq, value = line.partition("=")
            check(eq and name, "%s: not NAME=VALUE: %s" % (rel, line))
            check(name not in env, "%s: %s set twice" % (rel, name))
            env[name] = value
        return env

    @staticmethod
    def expand_exec(line, env):
        """ExecStart words expanded as systemd does: "${V}" is one word, "$V"
        is split on blanks (and vanishes when empty).  Unknown variables
        fail."""
        argv = []
        for w in line.split():
            m = re.fullmatch(r"\$\{(\w+)\}", w)
            if w.startswith("${"):
                check(m, "ExecStart word %s" % w)
                check(m.group(1) in env, "ExecStart uses %s, unset in the env file" % m.group(1))
                argv.append(env[m.group(1)])
            elif w.startswith("$"):
                check(w[1:] in env, "ExecStart uses %s, unset in the env file" % w[1:])
                argv.extend(env[w[1:]].split())
            else:
                check("$" not in w, "ExecStart word %s" % w)
                argv.append(w)
            check(len(argv) < MAX_WORDS, "ExecStart has %d words or more" % MAX_WORDS)
        return argv

    def parse_unit(self, text):
        """{section: {key: [values in order]}}: INI with backslash
        continuations, repeated keys kept."""
        unit, section, joined = {}, None, None
        for line in text.split("\n"):
            line = line.lstrip()
            if not line or line[0] in "#;":
                continue
            joined = line if joined is None else joined + " " + line
            if joined.endswith("\\"):
                joined = joined[:-1] + " "
                continue
            if joined.startswith("["):
                check(joined.endswith("]"), "bad section line %s" % joined)
                section = unit.setdefault(joined[1:-1], {})
            else:
                key, eq, value = joined.partition("=")
                check(section is not None and eq, "not KEY=VALUE in a section: %s" % joined)
                section.setdefault(key, []).append(value)
            joined = None
        check(joined is None, "unit ends inside a continued line")
        return unit

    def systemd_unit(self):
        rel = "deploy/hashring-register.service"
        text = self.read(rel)
        unit = self.parse_unit(text)
        env_file = self.load_env_file("deploy/hashring-register.env")
        check("Unit" in unit, "no [Unit] section")
        check("Install" in unit, "no [Install] section")
        check("Service" in unit, "no [Service] section")
        svc = {k: v[-1] for k, v in unit["Service"].items()}

        check("EnvironmentFile" in svc, "no EnvironmentFile=")
        check(svc.get("KillSignal") == "SIGTERM", "KillSignal is not SIGTERM")
        check(svc.get("Restart", "no") != "no", "no Restart=")
        check("ExecStart" in svc, "no ExecStart=")

        # Environment= sets what the file does not (EnvironmentFile= wins).
        env_unit = {}
        for line in unit["Service"].get("Environment", []):
            for assignment in shlex.split(line):
                name, eq, value = assignment.partition("=")
                check(eq, "Environment=%s: not NAME=VALUE" % line)
                env_unit[name] = value
        for name in env_unit:
            check(name not in env_file, "%s is set by both the unit and the env file, where "
                  "the file's value wins" % name)
        env = dict(env_unit, **env_file)

        argv = self.expand_exec(svc["ExecStart"], env)
        check(len(argv) > 1 and argv[1] == "register", "ExecStart does not run register")
        self.cli_command(rel, argv, list(env))

        # The tool where its package puts it.
        cli, cli_path = self.cli_package()
        check(argv[0] == cli_path, "ExecStart runs %s; the %s package installs the CLI at %s"
              % (argv[0], cli, cli_path))

        # No user to create by hand: a dynamic one, which therefore cannot
        # read a root-only file, so the client key comes as a credential.
        check(is_true(svc.get("DynamicUser")),
              "no DynamicUser=yes: the user the unit runs as must be created first")
        check("User" not in svc and "Group" not in svc,
              "User=/Group= with DynamicUser=yes: a static user of that name would be used")
        creds = dict(c.split(":", 1) for c in unit["Service"].get("LoadCredential", []))
        for name in ("ETCDCTL_KEY", "ETCDCTL_CERT", "ETCDCTL_CACERT"):
            path = env.get(name)
            if path is None:
                continue
            m = re.fullmatch(r"%d/(.+)", path)
            if name == "ETCDCTL_KEY":
                check(m, "ETCDCTL_KEY is %s, not a credential (%%d/NAME): the dynamic user "
                      "cannot read a root-only key" % path)
            if m:
                check(m.group(1) in creds, "%s names credential %s, which no LoadCredential= "
                      "loads" % (name, m.group(1)))

        # systemd must wait out the drain before its SIGKILL.
        stop_s = duration_s(svc.get("TimeoutStopSec"))
        drain_s = duration_s(option_value(argv, "--drain-seconds"))
        check(drain_s >= 0, "no --drain-seconds")
        check(stop_s > drain_s + 5, "TimeoutStopSec %d s, drain %d s" % (stop_s, drain_s))
        # The endpoints come from the environment file, as etcdctl reads them.
        check("ETCDCTL_ENDPOINTS" in env or option_value(argv, "--endpoints"),
              "no endpoints")

        # systemd's own check, on the unit as it stands but for the CLI's
        # path, taken from the unpacked package (and the man page that
        # Documentation= names from there too).  Any line it prints is a
        # problem it found, even at exit 0 (a key it ignores, say).
        root = self.packages().root
        copy = os.path.join(self.work, os.path.basename(rel))
        with open(copy, "w", encoding="utf-8") as f:
            f.write(re.sub(r"(?m)^ExecStart=%s\b" % re.escape(cli_path),
                           "ExecStart=" + root + cli_path, text))
        analyze = "/usr/bin/systemd-analyze"
        check(os.access(analyze, os.X_OK), "no %s (Debian's systemd package)" % analyze)
        rc, out = run([analyze, "verify", copy],
                      env=dict(os.environ, MANPATH=os.path.join(root, "usr/share/man")))
        check(rc == 0 and not out.strip(), "systemd-analyze verify: %s" % out.strip())


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: check_deploy.py SOURCE_DIR HASHRING BUILD_DIR CPACK")
    failures = 0
    with tempfile.TemporaryDirectory(prefix="hashring-deploy.") as work:
        checker = Checker(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], work)
        for name in ("checker_rejects_bad_commands", "compose_file", "compose_file_redis",
                     "dockerfile", "systemd_unit"):
            try:
                getattr(checker, name)()
                print("%s: ok" % name)
            except Fail as e:
                print("FAIL: %s: %s" % (name, e))
                failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
