#!/usr/bin/env python3
"""Checks that the documentation of the command lines agrees with the code.

tilefs: the option table of fs/options.c (printed by options_list) is the
one source. Every option of it must be in `tilefs --help` (with its
argument and default) and in the OPTIONS section of packaging/man/tilefs.1
(with its argument, and its default in the text); the man page must not
document an option the table lacks; every `-o NAME` the README names must
be in the table.

tfs: the subcommands `tfs --help` lists and the `tfs CMD` sections of
packaging/man/tfs.1 must be the same, and each subcommand's long options in
`tfs CMD --help` and in its SYNOPSIS entry of the man page too.

Prints every disagreement and exits 1 if there is any.
"""
import argparse
import re
import shlex
import subprocess
import sys

problems = []


def problem(msg):
    problems.append(msg)
    print("options_doc: " + msg)


# ---- troff -----------------------------------------------------------------

ESCAPES = [
    (r"\-", "-"), (r"\(mu", "x"), (r"\(aq", "'"), (r"\(dq", '"'),
    (r"\e", "\\"), (r"\ ", " "), (r"\&", ""),
]
# Macros whose arguments alternate fonts and are joined without spaces.
ALTERNATING = {"BI", "BR", "IB", "IR", "RB", "RI"}
FONT = {"B", "I", "SM", "SB"}


def unescape(text):
    text = re.sub(r"\\f[BIRP]", "", text)
    for esc, plain in ESCAPES:
        text = text.replace(esc, plain)
    return text


def troff_line(line):
    """The text one line of a man page shows; None for a layout request."""
    if not line.startswith("."):
        return unescape(line)
    if line.startswith('.\\"'):
        return None
    parts = line[1:].split(None, 1)
    macro = parts[0]
    rest = parts[1] if len(parts) > 1 else ""
    if macro not in ALTERNATING and macro not in FONT:
        return None
    try:
        args = shlex.split(rest.replace("\\", "\\\\"), posix=True)
    except ValueError:
        args = rest.split()
    args = [a.replace("\\\\", "\\") for a in args]
    joined = "".join(args) if macro in ALTERNATING else " ".join(args)
    return unescape(joined)


def man_sections(path):
    """{section name: [lines]} of a man page, by .SH and .SS."""
    sections = {}
    current = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r'\.S[HS]\s+"?([^"]*)"?\s*$', line)
            if m:
                current = m.group(1)
                sections[current] = []
            elif current is not None:
                sections[current].append(line)
    return sections


def tagged_paragraphs(lines):
    """[(tag text, body text)] of the .TP entries of a section."""
    out = []
    i = 0
    while i < len(lines):
        if lines[i].startswith(".TP") and i + 1 < len(lines):
            tag = troff_line(lines[i + 1]) or ""
            body = []
            i += 2
            while i < len(lines) and not re.match(r"\.(TP|PP|SH|SS)\b",
                                                   lines[i]):
                text = troff_line(lines[i])
                if text is not None:
                    body.append(text)
                i += 1
            out.append((tag.strip(), " ".join(" ".join(body).split())))
        else:
            i += 1
    return out


# ---- tilefs ----------------------------------------------------------------

def option_tag(name, arg):
    """How --help and the man page name an option: "-o cache=SIZE"."""
    if name.startswith("-"):
        return name
    return "-o " + name + ("=" + arg if arg else "")


def check_tilefs(args):
    table = []
    out = subprocess.run([args.list], check=True, capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        name, arg, default = line.split("\t")
        table.append((name, arg, default))
    if len(table) < 10:
        problem("option table has only %d entries" % len(table))
    tags = {option_tag(n, a): (n, a, d) for n, a, d in table}

    # tilefs --help: the daemon's part, before libfuse's own.
    run = subprocess.run([args.tilefs, "--help"], capture_output=True,
                         text=True)
    if run.returncode != 0:
        problem("tilefs --help exited %d" % run.returncode)
    help_text = run.stdout.split("FUSE options:")[0]
    entries = {}
    current = None
    for line in help_text.splitlines():
        m = re.match(r"    (-\S.*?)(?:  +(\S.*))?$", line)
        if m:
            current = m.group(1).strip()
            entries[current] = m.group(2) or ""
        elif current and line.startswith(" " * 20) and line.strip():
            entries[current] += " " + line.strip()
        else:
            current = None
    for tag, (name, arg, default) in tags.items():
        if tag not in entries:
            problem("tilefs --help lacks '%s'" % tag)
        elif default and "(default: %s)" % default not in entries[tag]:
            problem("tilefs --help: '%s' does not give its default '%s'"
                    % (tag, default))
    for tag in entries:
        if tag not in tags:
            problem("tilefs --help shows '%s', which the table lacks" % tag)

    # The man page's OPTIONS section.
    sections = man_sections(args.man_dir + "/tilefs.1")
    if "OPTIONS" not in sections:
        problem("tilefs.1 has no OPTIONS section")
        return
    documented = {}
    for tag, body in tagged_paragraphs(sections["OPTIONS"]):
        documented[" ".join(tag.split())] = body
    for tag, (name, arg, default) in tags.items():
        if tag not in documented:
            problem("tilefs.1 OPTIONS lacks '%s'" % tag)
        elif default and default not in documented[tag]:
            problem("tilefs.1 OPTIONS: '%s' does not give its default '%s'"
                    % (tag, default))
    for tag in documented:
        if tag not in tags:
            problem("tilefs.1 OPTIONS documents '%s', which the table lacks"
                    % tag)

    # The README names options as `-o NAME` or `-o NAME=ARG`.
    with open(args.readme, encoding="utf-8") as f:
        readme = f.read()
    names = {n: a for n, a, _ in table}
    seen = 0
    for m in re.finditer(r"`-o ([a-z_]+)(?:=([A-Za-z0-9_]+))?`", readme):
        seen += 1
        name, arg = m.group(1), m.group(2) or ""
        if name not in names:
            problem("README names '-o %s', which the table lacks" % name)
        elif arg and arg != names[name]:
            problem("README names '-o %s=%s', the table '-o %s=%s'"
                    % (name, arg, name, names[name]))
    if "tilefs --help" not in readme or "man tilefs" not in readme:
        problem("README does not point to 'tilefs --help' and 'man tilefs'")
    return seen


# ---- tfs -------------------------------------------------------------------

def long_options(text):
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", text))


def check_tfs(args):
    run = subprocess.run([args.tfs, "--help"], capture_output=True,
                         text=True)
    commands = re.findall(r"^  ([a-z]+)  ", run.stdout, re.M)
    if len(commands) < 5:
        problem("tfs --help lists only %r" % commands)
    sections = man_sections(args.man_dir + "/tfs.1")
    man_commands = [m.group(1) for s in sections
                    for m in [re.match(r"tfs ([a-z]+)\b", s)] if m]
    for c in commands:
        if c not in man_commands:
            problem("tfs.1 has no section for 'tfs %s'" % c)
    for c in man_commands:
        if c not in commands:
            problem("tfs.1 documents 'tfs %s', which tfs --help lacks" % c)

    # SYNOPSIS: one entry per command, up to the next .br.
    synopsis = {}
    current = None
    for line in sections.get("SYNOPSIS", []):
        if line.startswith(".br"):
            current = None
            continue
        text = troff_line(line)
        if text is None:
            continue
        m = re.match(r"tfs ([a-z]+)$", text.strip())
        if m:
            current = m.group(1)
            synopsis[current] = ""
        elif current:
            synopsis[current] += " " + text
    for c in commands:
        run = subprocess.run([args.tfs, c, "--help"], capture_output=True,
                             text=True)
        if run.returncode != 0:
            problem("tfs %s --help exited %d" % (c, run.returncode))
        usage = run.stdout.split("\n\n")[0]
        in_help = long_options(usage) - {"--help"}
        in_man = long_options(synopsis.get(c, "")) - {"--help"}
        if c not in synopsis:
            problem("tfs.1 SYNOPSIS lacks 'tfs %s'" % c)
            continue
        for o in sorted(in_help - in_man):
            problem("tfs.1 SYNOPSIS of 'tfs %s' lacks %s" % (c, o))
        for o in sorted(in_man - in_help):
            problem("tfs.1 SYNOPSIS of 'tfs %s' has %s, which 'tfs %s "
                    "--help' lacks" % (c, o, c))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--list", required=True, help="the options_list program")
    p.add_argument("--tilefs", required=True)
    p.add_argument("--tfs", required=True)
    p.add_argument("--man-dir", required=True)
    p.add_argument("--readme", required=True)
    args = p.parse_args()
    seen = check_tilefs(args)
    check_tfs(args)
    if problems:
        print("options_doc: FAIL (%d problems)" % len(problems))
        return 1
    print("options_doc: ok (README names %s options)" % seen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
