#!/usr/bin/env python3
"""Man pages and shell completion for flashpipe, made from the binary itself.

    gen_docs.py FLASHPIPE OUTDIR [LINK...]

runs `FLASHPIPE --help-json` (the command table) and `FLASHPIPE CMD --help-json`
(each command's CLI11 definitions: the same data `--help` prints, see
tools/describe.h), so the pages and completions cannot drift from `--help`:
a new command in tools/main.cc, a new flag or subcommand is covered without an
edit here. OUTDIR is emptied and filled with

    man/man1/flashpipe.1, flashpipe-CMD.1, flashpipe-CMD-SUB.1   (package flashpipe)
    bash/flashpipe, zsh/_flashpipe                                (package flashpipe)
    links/man1/LINK.1 -> flashpipe-LINK.1, links/bash/LINK -> flashpipe
                                                   (the AOSP-named links, their own package)

LINK names the commands installed as links of that name (img2simg ...).

The JSON of one command: name ("flashpipe write"), description, usage, footer,
options [{names, value: none|required|optional, value_name, description,
required, repeatable}], positionals [{name, value_name, description, required,
repeatable}], subcommands [the same, recursively].
"""
import json
import os
import re
import shutil
import subprocess
import sys

# Values that are numbers: completion offers nothing; any other value is
# completed as a file name (paths, devices, sizes typed by hand).
NUMERIC = {"UINT", "INT", "FLOAT", "NUMBER"}


def describe(binary, *args):
    cmd = [binary, *args, "--help-json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    try:
        if p.returncode != 0:
            raise ValueError("exit status %d: %s" % (p.returncode, p.stderr.strip()))
        return json.loads(p.stdout)
    except ValueError as e:
        sys.exit("gen_docs.py: %s: %s\nEvery command must parse its flags through tools::ParseOrExit "
                 "(CLI11 subcommands included), which answers --help-json (tools/describe.h)." % (" ".join(cmd), e))


def load(binary):
    program = describe(binary)
    commands = []
    for c in program["commands"]:
        app = describe(binary, c["name"])
        app["help"] = c["help"]
        commands.append(app)
    return program, commands


def walk(app, path=()):
    """Yields (path, app) for a command and every subcommand below it."""
    path = path + (app["name"].split()[-1],)
    yield path, app
    for sub in app["subcommands"]:
        yield from walk(sub, path)


# ---- man pages -------------------------------------------------------------

def roff(text):
    """Text for a roff line: backslashes, dashes of flags, leading dots."""
    text = text.replace("\\", "\\e")
    # A flag's dashes and a lone "-" (stdin) are minus signs; "non-blocking" keeps its hyphen.
    text = re.sub(r"(?<![\w-])--?(?=\w)|(?<![\w-])-(?![\w-])", lambda m: "\\-" * len(m.group(0)), text)
    if text.startswith((".", "'")):
        text = "\\&" + text
    return text


def flag(name):
    return "\\fB" + name.replace("-", "\\-") + "\\fR"


def option_head(o):
    head = ", ".join(flag(n) for n in o["names"])
    if o["value"] == "required":
        head += " \\fI" + o["value_name"] + "\\fR"
    elif o["value"] == "optional":
        head += "[=\\fI" + o["value_name"] + "\\fR]"
    if o["repeatable"]:
        head += " ..."
    return head


def usage_line(app):
    """SYNOPSIS: the command in bold, the rest as --help prints it."""
    name = app["name"]
    rest = app["usage"][len(name):].strip() if app["usage"].startswith(name) else app["usage"]
    words = []
    for w in rest.split():
        words.append(re.sub(r"[A-Z][A-Z0-9_]*", lambda m: "\\fI" + m.group(0) + "\\fR", w))
    return ".B " + name + "\n" + " ".join(words)


def page_name(path):
    return "-".join(("flashpipe",) + path)


def page_ref(name):
    """A reference to a page: \\- so that a line never breaks inside the name."""
    return ".BR {} (1)".format(name.replace("-", "\\-"))


def man_header(name, version):
    # .nh .ad l: no hyphenation, ragged right (names like flashpipe-img2simg stay whole).
    return '.TH {} 1 "" "flashpipe {}" "flashpipe manual"\n.nh\n.ad l'.format(name.upper().replace("-", "\\-"), version)


def command_page(path, app, version, links):
    name = page_name(path)
    oneline = app.get("help") or app["description"]
    out = [man_header(name, version), ".SH NAME", roff(name) + " \\- " + roff(oneline)]
    out += [".SH SYNOPSIS", usage_line(app)]
    if path[-1] in links and len(path) == 1:
        out += [".br", ".B " + path[-1], " ".join(w for w in usage_line(app).split("\n")[1:])]
    out += [".SH DESCRIPTION", roff(app["description"]) + ("" if app["description"].endswith(".") else ".")]
    if path[-1] in links and len(path) == 1:
        out += [".PP", "Also run as \\fB{}\\fR, a link to \\fBflashpipe\\fR.".format(path[-1])]
    if app["positionals"]:
        out.append(".SH ARGUMENTS")
        for p in app["positionals"]:
            out += [".TP", "\\fI" + p["name"] + "\\fR" + (" ..." if p["repeatable"] else "")
                    + ("" if p["required"] else " (optional)"), roff(p["description"])]
    if app["subcommands"]:
        out.append(".SH COMMANDS")
        for sub in app["subcommands"]:
            sub_path = path + (sub["name"].split()[-1],)
            out += [".TP", page_ref(page_name(sub_path)), roff(sub["description"])]
    out.append(".SH OPTIONS")
    for o in app["options"]:
        out += [".TP", option_head(o), roff(o["description"])]
    if app["footer"]:
        out += [".SH EXIT STATUS", roff(app["footer"])]
    parent = page_name(path[:-1]) if len(path) > 1 else "flashpipe"
    out += [".SH SEE ALSO", page_ref(parent)]
    return "\n".join(out) + "\n"


def program_page(program, commands, links):
    version = program["version"]
    out = [man_header("flashpipe", version), ".SH NAME", "flashpipe \\- " + roff(program["summary"])]
    out += [".SH SYNOPSIS", ".B flashpipe", "\\fICOMMAND\\fR [\\fIARGS\\fR...]", ".br",
            ".B flashpipe", "\\fICOMMAND\\fR \\fB\\-\\-help\\fR", ".br", ".B flashpipe \\-\\-version"]
    out += [".SH DESCRIPTION", "\\fBflashpipe\\fR: " + roff(program["summary"]) + ".",
            "One binary, one command per job, each described in its own page below."]
    if links:
        names = ["\\fB{}\\fR".format(l) for l in links]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        out += [".PP", "Run through a link named " + listed + ", flashpipe runs the command of that name."]
    out.append(".SH COMMANDS")
    for c in commands:
        out += [".TP", page_ref(page_name((c["name"].split()[-1],))), roff(c["help"])]
    out += [".SH EXIT STATUS", roff(program["footer"][0].upper() + program["footer"][1:]) + "."]
    out += [".SH SEE ALSO", ",\n".join(page_ref(page_name((c["name"].split()[-1],)))
                                       for c in commands)]
    return "\n".join(out) + "\n"


# ---- bash ------------------------------------------------------------------

def key(path):
    return "_".join(re.sub(r"\W", "_", p) for p in path)


def bash_script(commands, links):
    lines = ["# bash completion for flashpipe. Generated by scripts/gen_docs.py from",
             "# `flashpipe --help-json`: do not edit.", ""]
    lines.append("_flashpipe_subs_=" + shell_quote(" ".join(c["name"].split()[-1] for c in commands)))
    for c in commands:
        for path, app in walk(c):
            k = key(path)
            opts = [n for o in app["options"] for n in o["names"]]
            file_args = [n for o in app["options"] if o["value"] == "required" and o["value_name"] not in NUMERIC
                         for n in o["names"]]
            num_args = [n for o in app["options"] if o["value"] == "required" and o["value_name"] in NUMERIC
                        for n in o["names"]]
            lines.append("_flashpipe_opts_{}={}".format(k, shell_quote(" ".join(opts))))
            lines.append("_flashpipe_files_{}={}".format(k, shell_quote(" ".join(file_args))))
            lines.append("_flashpipe_nums_{}={}".format(k, shell_quote(" ".join(num_args))))
            lines.append("_flashpipe_subs_{}={}".format(
                k, shell_quote(" ".join(s["name"].split()[-1] for s in app["subcommands"]))))
    lines.append(BASH_FUNCTION)
    lines.append("complete -F _flashpipe flashpipe")
    for link in links:
        lines.append("# {0}: only where {0} is flashpipe (not the AOSP tool of that name)".format(link))
        lines.append('[[ $(type -P {0}) -ef $(type -P flashpipe) ]] && complete -F _flashpipe {0}'.format(link))
    return "\n".join(lines) + "\n"


BASH_FUNCTION = r'''
_flashpipe() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local prog=${COMP_WORDS[0]##*/} k="" i=1 w var
  COMPREPLY=()
  if [[ $prog != flashpipe ]]; then
    k=${prog//[^a-zA-Z0-9_]/_}
  elif ((COMP_CWORD == 1)); then
    mapfile -t COMPREPLY < <(compgen -W "$_flashpipe_subs_ --help --version" -- "$cur")
    return
  else
    k=${COMP_WORDS[1]//[^a-zA-Z0-9_]/_}
    i=2
  fi
  var=_flashpipe_opts_$k
  [[ -v $var ]] || return 0
  # Subcommands: descend while the next word names one.
  while ((i < COMP_CWORD)); do
    var=_flashpipe_subs_$k
    w=${COMP_WORDS[i]}
    [[ -n $w && " ${!var} " == *" $w "* ]] || break
    k=${k}_${w//[^a-zA-Z0-9_]/_}
    ((i++))
  done
  var=_flashpipe_nums_$k
  [[ " ${!var} " == *" $prev "* ]] && return 0
  var=_flashpipe_files_$k
  if [[ " ${!var} " == *" $prev "* ]]; then
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    return
  fi
  var=_flashpipe_subs_$k
  if [[ -n ${!var} && $i -eq $COMP_CWORD && $cur != -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "${!var}" -- "$cur")
    return
  fi
  if [[ $cur == -* ]]; then
    var=_flashpipe_opts_$k
    mapfile -t COMPREPLY < <(compgen -W "${!var}" -- "$cur")
    return
  fi
  compopt -o filenames 2>/dev/null
  mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}
'''


def shell_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


# ---- zsh -------------------------------------------------------------------

def zsh_desc(s):
    return re.sub(r"([\\\[\]])", r"\\\1", s)


def zsh_action(value_name):
    return " " if value_name in NUMERIC else "_files"


def zsh_option_specs(app):
    specs = []
    for o in app["options"]:
        names = o["names"]
        exclude = "" if o["repeatable"] else "(" + " ".join(names) + ")"
        repeat = "*" if o["repeatable"] else ""
        desc = "[" + zsh_desc(o["description"]) + "]"
        if o["value"] == "required":
            suffix = ":{}:{}".format(o["value_name"] or "VALUE", zsh_action(o["value_name"]))
            forms = [n + ("=" if n.startswith("--") else "+") + desc + suffix for n in names]
        elif o["value"] == "optional":
            forms = [n + "=-" + desc + "::{}:_files".format(o["value_name"]) for n in names]
        else:
            forms = [n + desc for n in names]
        specs += [shell_quote(exclude + repeat + f) for f in forms]
    return specs


def zsh_function(path, app):
    name = "_flashpipe_cmd_" + key(path)
    specs = zsh_option_specs(app)
    if app["subcommands"]:
        subs = " ".join("{}\\:{}".format(s["name"].split()[-1], zsh_desc(s["description"]).replace(":", "\\:")
                                          .replace(" ", "\\ ")) for s in app["subcommands"])
        specs += [shell_quote("1:command:((" + subs + "))"), shell_quote("*:: :->args")]
        body = ["  local curcontext=$curcontext state line ret=1",
                "  _arguments -C -s -S \\", "    " + " \\\n    ".join(specs) + " && ret=0",
                "  if [[ $state == args ]]; then",
                "    local f=" + name + "_${words[1]//[^a-zA-Z0-9_]/_}",
                "    (( $+functions[$f] )) && $f && ret=0",
                "  fi", "  return ret"]
    else:
        for n, p in enumerate(app["positionals"], 1):
            action = zsh_action(p["value_name"])
            if p["repeatable"]:
                specs.append(shell_quote("*:{}:{}".format(p["name"], action)))
            else:
                specs.append(shell_quote("{}{}:{}:{}".format(n, ":" if not p["required"] else "", p["name"], action)))
        body = ["  _arguments -s -S \\", "    " + " \\\n    ".join(specs)]
    return "\n".join([name + "() {"] + body + ["}"])


def zsh_script(commands, links):
    out = ["#compdef flashpipe " + " ".join(links),
           "# zsh completion for flashpipe. Generated by scripts/gen_docs.py from",
           "# `flashpipe --help-json`: do not edit.", ""]
    for c in commands:
        for path, app in walk(c):
            out += [zsh_function(path, app), ""]
    table = " ".join(shell_quote("{}:{}".format(c["name"].split()[-1], c["help"].replace(":", "\\:")))
                     for c in commands)
    out.append(ZSH_MAIN.replace("@COMMANDS@", table))
    return "\n".join(out) + "\n"


ZSH_MAIN = r'''_flashpipe() {
  if [[ $service != flashpipe ]]; then
    # img2simg...: flashpipe's flags only where the name is a link to flashpipe.
    if [[ ${commands[$service]:A} != ${commands[flashpipe]:A} ]]; then
      _default
      return
    fi
    local f=_flashpipe_cmd_${service//[^a-zA-Z0-9_]/_}
    (( $+functions[$f] )) && $f
    return
  fi
  local -a commands
  commands=(@COMMANDS@)
  if (( CURRENT == 2 )); then
    if [[ $PREFIX == -* ]]; then
      compadd -- --help --version
    else
      _describe -t commands 'flashpipe command' commands
    fi
    return
  fi
  local f=_flashpipe_cmd_${words[2]//[^a-zA-Z0-9_]/_}
  shift words
  (( CURRENT-- ))
  curcontext=${curcontext%:*:*}:flashpipe-${words[1]}:
  (( $+functions[$f] )) && $f
}

_flashpipe "$@"'''


# ---- main ------------------------------------------------------------------

def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def link(target, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: gen_docs.py FLASHPIPE OUTDIR [LINK...]")
    binary, outdir, links = os.path.abspath(argv[1]), argv[2], argv[3:]
    program, commands = load(binary)
    names = {c["name"].split()[-1] for c in commands}
    missing = [l for l in links if l not in names]
    if missing:
        sys.exit("gen_docs.py: links name no command: " + ", ".join(missing))
    for sub in ("man", "bash", "zsh", "links"):
        shutil.rmtree(os.path.join(outdir, sub), ignore_errors=True)
    man = os.path.join(outdir, "man", "man1")
    write(os.path.join(man, "flashpipe.1"), program_page(program, commands, links))
    for c in commands:
        for path, app in walk(c):
            write(os.path.join(man, page_name(path) + ".1"), command_page(path, app, program["version"], links))
    write(os.path.join(outdir, "bash", "flashpipe"), bash_script(commands, links))
    write(os.path.join(outdir, "zsh", "_flashpipe"), zsh_script(commands, links))
    for l in links:
        link(page_name((l,)) + ".1", os.path.join(outdir, "links", "man1", l + ".1"))
        link("flashpipe", os.path.join(outdir, "links", "bash", l))


if __name__ == "__main__":
    main(sys.argv)
