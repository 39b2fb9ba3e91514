#!/usr/bin/python3
"""Checks that the deploy files parse, and that the real CLI accepts every
hashring command they run.

    check_deploy.py SOURCE_DIR HASHRING_BINARY

No Docker engine or systemd instance runs here, so this is what can be
checked without one:

- docker-compose.yml is YAML with three etcd members forming one cluster,
  one `hashring watch` and two `hashring register` services built from
  deploy/Dockerfile, sharing one prefix and every etcd member;
- deploy/Dockerfile is well formed: known instructions, multi-stage, Debian
  12 bases, JSON-form commands, the build packages of
  deploy/install-deps.sh, and a runtime package for each shared library
  the CLI links;
- deploy/hashring-register.service has its sections and stop settings, and
  its ExecStart, expanded with deploy/hashring-register.env as systemd
  would, is a valid command;
- every hashring command above passes the CLI's own parser (`hashring CMD
  ARGS... --help` exits 0 only if each option and value was accepted),
  each option and ETCDCTL_* variable is documented in `hashring CMD
  --help`, and each subcommand and option is one that the integration
  tests (tests/integration) run against a real etcd.
"""
import glob
import json
import os
import re
import subprocess
import sys

import yaml

RUN_TIMEOUT_S = 20
MAX_WORDS = 128


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def run(argv):
    """(exit status, stdout and stderr together); status -1 on a timeout."""
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           errors="replace", timeout=RUN_TIMEOUT_S)
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


def has_word(s, word):
    return word in s.split()


class Checker:
    def __init__(self, root, cli):
        self.root = root
        self.cli = cli
        sources = sorted(glob.glob(os.path.join(root, "tests/integration/test_*.c")))
        self.tests = "\n".join(open(p, encoding="utf-8").read() for p in sources)

    def path(self, rel):
        return os.path.join(self.root, rel)

    def read(self, rel):
        with open(self.path(rel), encoding="utf-8") as f:
            return f.read()

    # ---- the CLI check shared by every deploy file ------------------------

    @staticmethod
    def help_lists(help_text, opt):
        """True when the help lists option `opt` ("  --name ARG  text" or a
        flag alone on its line)."""
        return re.search(r"(?<=  )%s(?=[ \n])" % re.escape(opt), help_text) is not None

    def cli_command(self, where, argv, env_names):
        """argv is a hashring command line as a deploy file runs it (argv[0]
        "hashring" or a path ending in "/hashring"); env_names the variables
        the file gives it."""
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

    def checker_rejects_bad_commands(self):
        """The checker itself rejects what the CLI rejects."""
        rc, _ = run([self.cli, "register", "--bogus", "--help"])
        check(rc == 2, "register --bogus --help exited %d, not 2" % rc)
        rc, _ = run([self.cli, "register", "--ttl", "1", "--help"])
        check(rc == 2, "register --ttl 1 --help exited %d, not 2" % rc)
        for text, want in (("1m30s", 90), ("20s", 20), ("40", 40), ("x", -1)):
            check(duration_s(text) == want, "duration_s(%r) is %d" % (text, duration_s(text)))

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

    def compose_file(self):
        try:
            with open(self.path("docker-compose.yml"), encoding="utf-8") as f:
                doc = yaml.safe_load(f)
        except yaml.YAMLError as e:
            raise Fail("docker-compose.yml is not valid YAML: %s" % e)
        check(isinstance(doc, dict), "compose file is not a mapping")
        services = doc.get("services")
        check(isinstance(services, dict), "no services mapping")

        commands = {name: self.service_command(name, svc) for name, svc in services.items()}
        for name, argv in commands.items():
            check(argv, "service %s has no command" % name)
        etcd_names, cluster = [], None
        for name, svc in services.items():
            argv = commands[name]
            if os.path.basename(argv[0]) != "etcd":
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

        prefix, ids, n_watch = None, [], 0
        for name, svc in services.items():
            argv = commands[name]
            if os.path.basename(argv[0]) == "etcd":
                continue
            where = "docker-compose.yml service %s" % name
            build = svc.get("build")
            ctx = build.get("context") if isinstance(build, dict) else None
            df = build.get("dockerfile") if isinstance(build, dict) else None
            check(isinstance(ctx, str) and df == "deploy/Dockerfile",
                  "%s: not built from deploy/Dockerfile" % where)
            path = os.path.join(self.root, ctx, df)
            check(os.path.exists(path), "%s: %s missing" % (where, path))
            env = self.service_env(svc)
            self.cli_command(where, argv, list(env))

            # Every hashring service shares one ring: same prefix.
            p = option_value(argv, "--prefix")
            check(p, "%s: no --prefix" % where)
            prefix = prefix or p
            check(p == prefix, "%s: prefix %s, not %s" % (where, p, prefix))
            # ...and the etcd members of this file, started first.
            eps = option_value(argv, "--endpoints") or env.get("ETCDCTL_ENDPOINTS")
            check(eps, "%s: no endpoints" % where)
            deps = svc.get("depends_on") or []
            for member in etcd_names:
                url = "http://%s:2379" % member
                check(url in eps, "%s: endpoints lack %s" % (where, url))
                check(member in deps, "%s: does not depend on %s" % (where, member))

            if argv[1] == "watch":
                n_watch += 1
            elif argv[1] == "register":
                node = option_value(argv, "--id")
                drain = option_value(argv, "--drain-seconds")
                grace = svc.get("stop_grace_period")
                sig = svc.get("stop_signal")
                check(node, "%s: no --id" % where)
                check(node not in ids, "%s: id %s used twice" % (where, node))
                ids.append(node)
                # docker stop must let the drain finish.
                check(sig is None or sig == "SIGTERM", "%s: stop_signal is not SIGTERM" % where)
                check(isinstance(grace, str) and
                      duration_s(grace) > (int(drain) if drain else 0) + 2,
                      "%s: stop_grace_period too short for the drain" % where)
            else:
                check(False, "%s: runs hashring %s" % (where, argv[1]))
        check(len(etcd_names) == 3, "%d etcd members, not 3" % len(etcd_names))
        check(n_watch == 1, "%d watch services, not 1" % n_watch)
        check(len(ids) == 2, "%d register services, not 2" % len(ids))
        # One cluster of exactly these three members.
        for member in etcd_names:
            entry = "%s=http://%s:2380" % (member, member)
            check(entry in cluster, "initial cluster lacks %s" % entry)
        check(cluster.count(",") == len(etcd_names) - 1,
              "initial cluster %s has other members" % cluster)

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

    @staticmethod
    def package_of(soname):
        """The Debian package that ships shared library `soname`, or None."""
        rc, out = run(["/usr/bin/dpkg", "-S", "*/" + soname])
        return out.split(":", 1)[0] if rc == 0 else None

    def dockerfile(self):
        ins = self.parse_dockerfile(self.read("deploy/Dockerfile"))
        check(ins, "deploy/Dockerfile has no instructions")
        check(ins[0][0] in ("FROM", "ARG"),
              "a Dockerfile starts with FROM or ARG, not %s" % ins[0][0])
        args_before = []
        for kw, args, stage in ins:
            check(kw in self.KNOWN, "unknown instruction %s" % kw)
            check(args, "%s without arguments" % kw)
            if stage < 0:
                check(kw == "ARG", "%s before the first FROM" % kw)
                args_before.append(args)
        last = ins[-1][2]
        check(last >= 1, "not a multi-stage build")

        stages, n_stages, copies_from_build = {}, 0, 0
        build_runs, final_runs, cmd_args = [], [], None
        for kw, args, stage in ins:
            if kw == "FROM":
                words = args.split()
                image = words[0]
                # ${NAME} images come from the ARGs before the first FROM.
                m = re.fullmatch(r"\$\{(\w+)\}", image)
                if m:
                    defaults = dict(a.split("=", 1) for a in args_before if "=" in a)
                    check(m.group(1) in defaults, "FROM %s: no ARG default" % image)
                    image = defaults[m.group(1)].split()[0]
                check(image.startswith("debian:12") or image.startswith("debian:bookworm"),
                      "stage %d is not Debian 12: %s" % (stage, image))
                if len(words) >= 3:
                    check(words[1].lower() == "as", "FROM %s" % args)
                    stages[stage] = words[2]
                n_stages += 1
            elif kw == "COPY" and args.startswith("--from="):
                name = args[len("--from="):].split()[0]
                check(name in [stages.get(s) for s in range(stage)],
                      "COPY %s: no earlier stage of that name" % args)
                copies_from_build += stage == last
            elif kw == "RUN":
                (final_runs if stage == last else build_runs).append(args)
            elif kw in ("CMD", "ENTRYPOINT", "SHELL"):
                if args.startswith("[") or kw == "SHELL":
                    try:
                        arr = json.loads(args)
                    except ValueError:
                        arr = None
                    check(isinstance(arr, list) and arr and
                          all(isinstance(w, str) for w in arr),
                          "%s: not a JSON array of strings: %s" % (kw, args))
                if kw == "CMD" and stage == last:
                    cmd_args = args
            elif kw == "STOPSIGNAL":
                check(args == "SIGTERM", "STOPSIGNAL %s" % args)
        check(n_stages == last + 1, "%d FROMs for %d stages" % (n_stages, last + 1))
        check(copies_from_build > 0, "the runtime stage copies nothing from the build")
        check(cmd_args and '"hashring"' in cmd_args, "the image's CMD is not hashring")
        # Built with Debian's packages only: apt-get, and no other fetcher.
        build_text, final_text = " ".join(build_runs), " ".join(final_runs)
        check("apt-get install" in build_text, "the build stage runs no apt-get install")
        check("cmake --build" in build_text, "the build stage runs no cmake --build")
        for fetcher in ("curl ", "wget ", "git clone"):
            check(fetcher not in build_text, "the build stage runs %s" % fetcher)

        # Every build package install-deps.sh names (its PACKAGES list), a
        # -dev one or a tool.
        m = re.search(r'^PACKAGES="([^"]*)"', self.read("deploy/install-deps.sh"), re.M)
        check(m, "deploy/install-deps.sh has no PACKAGES list")
        for pkg in m.group(1).split():
            if "-dev" in pkg or pkg in ("cmake", "pkg-config"):
                check(has_word(build_text, pkg), "the build stage does not install %s" % pkg)

        # The runtime stage installs the package of each library the CLI
        # needs (libc comes with the base image).
        rc, out = run(["/usr/bin/readelf", "-d", self.cli])
        check(rc == 0, "readelf -d %s: %s" % (self.cli, out))
        libs = 0
        for soname in re.findall(r"Shared library: \[([^\]]*)\]", out):
            if soname.startswith(("libc.so", "libm.so", "ld-linux", "libasan",
                                  "libubsan", "libtsan")):
                continue
            pkg = self.package_of(soname)
            check(pkg, "no Debian package ships %s" % soname)
            check(has_word(final_text, pkg),
                  "the runtime stage lacks %s (for %s)" % (pkg, soname))
            libs += 1
        check(libs > 0, "the CLI links no library a package ships")

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

    def systemd_unit(self):
        unit, section, joined = {}, None, None
        env = self.load_env_file("deploy/hashring-register.env")
        # INI with backslash continuations; keys may repeat (kept last).
        for line in self.read("deploy/hashring-register.service").split("\n"):
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
                section[key] = value
            joined = None
        check(joined is None, "unit ends inside a continued line")
        check("Unit" in unit, "no [Unit] section")
        check("Install" in unit, "no [Install] section")
        svc = unit.get("Service")
        check(svc is not None, "no [Service] section")

        check("EnvironmentFile" in svc, "no EnvironmentFile=")
        check(svc.get("KillSignal") == "SIGTERM", "KillSignal is not SIGTERM")
        check(svc.get("Restart", "no") != "no", "no Restart=")
        check("ExecStart" in svc, "no ExecStart=")
        argv = self.expand_exec(svc["ExecStart"], env)
        check(len(argv) > 1 and argv[1] == "register", "ExecStart does not run register")
        self.cli_command("deploy/hashring-register.service", argv, list(env))

        # systemd must wait out the drain before its SIGKILL.
        stop_s = duration_s(svc.get("TimeoutStopSec"))
        drain_s = duration_s(option_value(argv, "--drain-seconds"))
        check(drain_s >= 0, "no --drain-seconds")
        check(stop_s > drain_s + 5, "TimeoutStopSec %d s, drain %d s" % (stop_s, drain_s))
        # The endpoints come from the environment file, as etcdctl reads them.
        check("ETCDCTL_ENDPOINTS" in env or option_value(argv, "--endpoints"),
              "no endpoints")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_deploy.py SOURCE_DIR HASHRING")
    checker = Checker(sys.argv[1], sys.argv[2])
    failures = 0
    for name in ("checker_rejects_bad_commands", "compose_file", "dockerfile",
                 "systemd_unit"):
        try:
            getattr(checker, name)()
            print("%s: ok" % name)
        except Fail as e:
            print("FAIL: %s: %s" % (name, e))
            failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
