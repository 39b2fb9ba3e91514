#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Checks that the man page and the --help texts of the CLI agree.

    check_manpage.py HASHRING_BINARY MAN_PAGE CLI_DOC

- The commands listed by `hashring --help` are the COMMANDS subsections of
  the man page, and the global options are those of its OPTIONS section.
- For each command, the subsection title is the usage line of
  `hashring CMD --help`, and the options listed by `hashring CMD --help`
  are exactly those the man page documents for it: the subsection's own,
  the RING OPTIONS and the ETCD CONNECTION OPTIONS when the subsection
  says it takes them, and -h/--help, which every command accepts.
- The title line names the version `hashring --version` prints.
- The commands that exit 0 when SIGINT or SIGTERM end them (the others end
  by the signal) are the same in `hashring --help`, the man page's EXIT
  STATUS and CLI_DOC (docs/cli.md); test_cli_unreachable checks that the
  commands do as --help says.
- The page renders without groff warnings.
"""
import re
import subprocess
import sys

ETCD_SENTENCE = "Takes the etcd connection options."
RING_SENTENCE = "Takes the ring options."
OPTION = re.compile(r"(?:^|[\s\"])(--?[A-Za-z0-9][A-Za-z0-9-]*)")


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s exited with %d: %s" % (" ".join(argv), p.returncode,
                                             p.stderr))
    return p.stdout


def unescape(roff):
    """Plain text of a roff line: escaped dashes, font changes and the
    macro name are dropped."""
    text = roff.replace("\\-", "-").replace("\\|", "")
    text = re.sub(r"\\f[BIRP]", "", text)
    text = re.sub(r"^\.[A-Z]+\s*", "", text)
    return text


def parse_help(text):
    """Returns (usage, options, commands) of a --help text: the options are
    the leading dash words of the indented lines of its "Options:" block,
    the commands the first word of those of its "Commands:" block; a blank
    line ends a block."""
    usage, options, commands, block = None, set(), [], None
    for line in text.splitlines():
        if line.startswith("Usage: "):
            usage = line[len("Usage: "):].strip()
        elif line in ("Options:", "Commands:"):
            block = line
        elif not line.strip():
            block = None
        elif not line.startswith("  "):
            continue  # a wrapped description line
        elif block == "Commands:":
            commands.append(line.split()[0])
        elif block == "Options:" and line.lstrip().startswith("-"):
            for word in line.split():
                if not word.startswith("-"):
                    break
                options.add(word.rstrip(","))
    return usage, options, commands


def parse_man(text):
    """Returns {section: {"title", "terms", "body"}} keyed by .SH name and,
    for subsections, by "SH/SS title"."""
    sections, current, lines = {}, None, text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r'^\.(SH|SS)\s+"?(.*?)"?\s*$', line)
        if m:
            title = unescape(m.group(2))
            if m.group(1) == "SH":
                sh = title
                key = title
            else:
                key = sh + "/" + title
            current = sections.setdefault(key, {"title": title, "terms": set(),
                                                "body": ""})
            continue
        if current is None:
            continue
        current["body"] += unescape(line) + "\n"
        if line.startswith(".TP") and i + 1 < len(lines):
            current["terms"].update(OPTION.findall(unescape(lines[i + 1])))
    return sections


def words_between(text, start, end, commands):
    """The command names that are words of `text` (lines joined) between
    `start` and the next `end`; None if either is missing."""
    flat = " ".join(text.split())
    i = flat.find(start)
    j = flat.find(end, i + len(start)) if i >= 0 else -1
    if j < 0:
        return None
    part = flat[i + len(start):j]
    return {c for c in commands if re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(c), part)}


def man_exit_zero(page_text, commands):
    """The commands the man page's EXIT STATUS entry for 0 names."""
    text = page_text.split('.SH "EXIT STATUS"', 1)[-1]
    m = re.search(r"^\.TP\n\.B 0\n(.*?)^\.TP", text, re.M | re.S)
    if not m:
        return None
    body = " ".join(unescape(line) for line in m.group(1).splitlines())
    return words_between(body + " END", "", "END", commands)


def compare(what, from_help, from_man, failures):
    for opt in sorted(from_help - from_man):
        failures.append("%s: %s is in --help but not in the man page"
                        % (what, opt))
    for opt in sorted(from_man - from_help):
        failures.append("%s: %s is in the man page but not in --help"
                        % (what, opt))


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: check_manpage.py HASHRING MAN_PAGE CLI_DOC")
    cli, page, cli_doc = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(page, encoding="utf-8") as f:
        page_text = f.read()
    with open(cli_doc, encoding="utf-8") as f:
        doc_text = f.read()
    man = parse_man(page_text)
    failures = []

    help_text = run([cli, "--help"])
    _, global_opts, commands = parse_help(help_text)
    if not commands:
        failures.append("no command found in `hashring --help`")
    compare("hashring", global_opts, man.get("OPTIONS", {}).get("terms", set()),
            failures)

    subsections = {k.split("/", 1)[1]: v for k, v in man.items()
                   if k.startswith("COMMANDS/")}
    by_command = {t.split()[1]: v for t, v in subsections.items()}
    for cmd in sorted(set(by_command) - set(commands)):
        failures.append("the man page documents '%s', unknown to --help" % cmd)

    etcd = man.get("ETCD CONNECTION OPTIONS", {}).get("terms", set())
    ring = man.get("RING OPTIONS", {}).get("terms", set())
    for cmd in commands:
        usage, opts, _ = parse_help(run([cli, cmd, "--help"]))
        sub = by_command.get(cmd)
        if sub is None:
            failures.append("%s: no subsection in the man page" % cmd)
            continue
        if usage != sub["title"]:
            failures.append("%s: usage differs:\n  --help: %s\n  man:    %s"
                            % (cmd, usage, sub["title"]))
        documented = set(sub["terms"]) | {"-h", "--help"}
        body = " ".join(sub["body"].split())
        if ETCD_SENTENCE in body:
            documented |= etcd
        if RING_SENTENCE in body:
            documented |= ring
        compare(cmd, opts, documented, failures)
        print("%s: %d options" % (cmd, len(opts)))

    # Which commands exit 0 when a signal ends them, said three times.
    zero = {
        "--help": words_between(help_text, "SIGINT or SIGTERM end ", "with exit 0;",
                                commands),
        "the man page's EXIT STATUS 0": man_exit_zero(page_text, commands),
        cli_doc: words_between(doc_text, "SIGINT or SIGTERM stop any wait at once:",
                               "then exit 0", commands),
    }
    for where, names in zero.items():
        if not names:
            failures.append("%s: no list of the commands that exit 0 on SIGINT or SIGTERM"
                            % where)
    if all(zero.values()) and len({frozenset(v) for v in zero.values()}) != 1:
        failures.append("the commands that exit 0 on SIGINT or SIGTERM differ: %s"
                        % "; ".join("%s: %s" % (k, " ".join(sorted(v)))
                                    for k, v in zero.items()))
    else:
        print("exit 0 on a signal: %s" % " ".join(sorted(zero["--help"] or [])))

    version = run([cli, "--version"]).strip()
    th = re.search(r'^\.TH\s+\S+\s+1\s+"[^"]*"\s+"([^"]*)"', page_text, re.M)
    if not th or th.group(1) != version:
        failures.append("the .TH line names '%s', the tool says '%s'"
                        % (th.group(1) if th else None, version))

    groff = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", page],
                           capture_output=True, text=True)
    if groff.returncode != 0 or groff.stderr:
        failures.append("groff: " + groff.stderr.strip())

    for line in failures:
        print("FAIL:", line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
