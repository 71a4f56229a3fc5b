//! The bash, zsh and fish completions: every option's forms and the values it takes.
use super::*;

/// A word for a shell's single-quoted string.
pub(super) fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The forms of an option as case patterns: `-d|--dir`.
pub(super) fn forms(o: &OptDef) -> Vec<String> {
    let mut f = Vec::new();
    if let Some(c) = o.short {
        f.push(format!("-{c}"));
    }
    f.push(format!("--{}", o.name));
    f
}

/// `words` joined by `sep`, broken into lines of at most about `width` columns with a trailing
/// backslash (shell line continuation); continuation lines start with `indent`.
pub(super) fn sh_wrap(words: &[String], sep: &str, indent: &str, width: usize) -> String {
    let mut out = String::new();
    let mut col = indent.len();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
            col += sep.len();
            if col + w.len() + 2 > width {
                out.push_str(if sep.ends_with(' ') { "\\\n" } else { " \\\n" });
                out.push_str(indent);
                col = indent.len();
            }
        }
        out.push_str(w);
        col += w.len();
    }
    out
}

pub(super) fn bash(opts: &[OptDef]) -> String {
    let mut all: Vec<String> = opts.iter().map(|o| format!("--{}", o.name)).collect();
    all.extend(opts.iter().filter_map(|o| o.short.map(|c| format!("-{c}"))));
    let options = sh_wrap(&all, " ", "            ", 100);
    // Options whose value may be the next word; optional values are only ever attached.
    let separate: Vec<String> = opts
        .iter()
        .filter(|o| o.arg == ArgKind::Required)
        .flat_map(forms)
        .map(|f| sh_quote(&f))
        .collect();
    let separate_case = if separate.is_empty() {
        String::new()
    } else {
        let pats = sh_wrap(&separate, "|", "                ", 100);
        format!("            {pats})\n                opt=$prev\n                ;;\n")
    };
    // Value completions of the options that have values, one case per kind of value.
    let mut actions: Vec<(String, Vec<String>)> = Vec::new();
    for o in opts.iter().filter(|o| o.arg != ArgKind::None) {
        let action = match values(o) {
            Values::Free => continue,
            Values::Words(words) => {
                let words: Vec<String> = words.iter().map(|w| sh_quote(w)).collect();
                format!("_ringdl_words \"$prefix\" \"$cur\" {}", words.join(" "))
            }
            Values::Files => "_ringdl_paths \"$prefix\" \"$cur\" -f".to_string(),
            Values::Dirs => "_ringdl_paths \"$prefix\" \"$cur\" -d".to_string(),
        };
        let pats: Vec<String> = forms(o).iter().map(|f| sh_quote(f)).collect();
        match actions.iter_mut().find(|(a, _)| *a == action) {
            Some((_, p)) => p.extend(pats),
            None => actions.push((action, pats)),
        }
    }
    let mut cases = String::new();
    for (action, pats) in &actions {
        let pats = sh_wrap(pats, "|", "                ", 100);
        let _ = writeln!(
            cases,
            "            {pats})\n                {action}\n                ;;"
        );
    }

    let mut s = String::new();
    s.push_str(BASH_HEAD);
    let _ = write!(
        s,
        r#"
_ringdl() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev= opt= prefix= i
    COMPREPLY=()
    (( COMP_CWORD > 0 )) && prev=${{COMP_WORDS[COMP_CWORD-1]}}
    # After `--` every word is a URI or a file.
    for (( i = 1; i < COMP_CWORD; i++ )); do
        if [[ ${{COMP_WORDS[i]}} == -- ]]; then
            _ringdl_paths '' "$cur" -f
            return 0
        fi
    done
    # `--name=value`: bash splits it at `=` when `=` is in COMP_WORDBREAKS (the default).
    if [[ $cur == = && $prev == --?* ]]; then
        opt=$prev cur=
    elif [[ $prev == = ]] && (( COMP_CWORD > 1 )) && [[ ${{COMP_WORDS[COMP_CWORD-2]}} == --?* ]]; then
        opt=${{COMP_WORDS[COMP_CWORD-2]}}
    elif [[ $cur == --?*=* ]]; then
        opt=${{cur%%=*}} prefix=${{cur%%=*}}= cur=${{cur#*=}}
    elif [[ $cur == -* ]]; then
        _ringdl_words '' "$cur" \
            {options}
        return 0
    else
        case $prev in
{separate_case}        esac
    fi
    if [[ -n $opt ]]; then
        case $opt in
{cases}        esac
        return 0
    fi
    _ringdl_paths '' "$cur" -f
}}

# $1: text to put back before each reply, $2: the word so far, $3...: the words to offer.
_ringdl_words() {{
    local prefix=$1 cur=$2
    shift 2
    mapfile -t COMPREPLY < <(compgen -W "$*" -- "$cur")
    [[ -z $prefix ]] || COMPREPLY=("${{COMPREPLY[@]/#/$prefix}}")
}}

# $1: text to put back before each reply, $2: the path so far, $3: -f for files, -d for directories.
_ringdl_paths() {{
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen "$3" -- "$2")
    [[ -z $1 ]] || COMPREPLY=("${{COMPREPLY[@]/#/$1}}")
}}

complete -F _ringdl ringdl
"#,
        options = options,
    );
    s.push_str(BASH_ALIAS);
    s
}

pub(super) const BASH_HEAD: &str = "\
# bash completion for ringdl                                    -*- shell-script -*-
# Generated from ringdl's option table by `ringdl --generate=bash`; do not edit.
#
# Install as /usr/share/bash-completion/completions/ringdl, or source it from ~/.bashrc.
#
# aria2c: bash completes an alias by the alias's own name, so after `alias aria2c=ringdl` this file
# registers _ringdl for aria2c too, unless aria2's own completion for aria2c is installed (it knows
# the same options and stays in charge). bash-completion loads this file the first time `ringdl` is
# completed; to complete `aria2c` from the start of a shell, source this file in ~/.bashrc after the
# alias (a package may also install it as completions/aria2c.bash, which bash-completion tries only
# after aria2's own completions/aria2c).
";

pub(super) const BASH_ALIAS: &str = r#"
# aria2c (see the top of this file). The guard: this file may be what loading aria2c's completion
# finds (installed as aria2c.bash), and then it is being sourced from inside itself.
if [[ -z ${_ringdl_registering-} ]]; then
    _ringdl_registering=1
    # Whether aria2c is completed by something else than this file or bash-completion's fallback.
    _ringdl_aria2c_taken() {
        case $(complete -p aria2c 2>/dev/null) in
            '' | *' _minimal '* | *' _comp_complete_minimal '* | *' _ringdl '*) return 1 ;;
        esac
    }
    if ! _ringdl_aria2c_taken; then
        # bash-completion loads a command's completion when it is first needed: let aria2's load.
        if declare -F _comp_load >/dev/null; then
            _comp_load -- aria2c
        elif declare -F __load_completion >/dev/null; then
            __load_completion aria2c
        fi >/dev/null 2>&1
        _ringdl_aria2c_taken || complete -F _ringdl aria2c
    fi
    unset -f _ringdl_aria2c_taken
    unset _ringdl_registering
fi
"#;

// ---------------------------------------------------------------------------------------------
// zsh

/// Text for inside an `_arguments` spec that is itself single-quoted.
pub(super) fn zsh_text(s: &str, specials: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
            continue;
        }
        if c == '\\' || specials.contains(c) {
            out.push('\\');
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out
}

pub(super) fn zsh(opts: &[OptDef]) -> String {
    let mut specs = String::new();
    for o in opts {
        let f = forms(o);
        // Long options take `--name=v` or `--name v`, short ones `-xv` or `-x v` (`=`, `+`); optional
        // values only attached (`=-`, `-`).
        let suffix = |form: &str| match (o.arg, form.starts_with("--")) {
            (ArgKind::None, _) => "",
            (ArgKind::Required, true) => "=",
            (ArgKind::Required, false) => "+",
            (ArgKind::Optional, true) => "=-",
            (ArgKind::Optional, false) => "-",
        };
        let names: Vec<String> = f.iter().map(|n| format!("{n}{}", suffix(n))).collect();
        let (prefix, names) = if o.cumulative {
            ("'*'".to_string(), names)
        } else if f.len() > 1 {
            (format!("'({})'", f.join(" ")), names)
        } else {
            (String::new(), names)
        };
        let names = if names.len() > 1 {
            format!("{{{}}}", names.join(","))
        } else {
            names[0].clone()
        };
        let mut spec = format!("'[{}]", zsh_text(summary(o), "[]"));
        if o.arg != ArgKind::None {
            let colons = if o.arg == ArgKind::Optional {
                "::"
            } else {
                ":"
            };
            let message = zsh_text(
                if o.value_name.is_empty() {
                    "VALUE"
                } else {
                    o.value_name
                },
                ":",
            );
            let action = match values(o) {
                Values::Free => " ".to_string(),
                Values::Words(words) => {
                    let words: Vec<String> = words
                        .iter()
                        .map(|w| zsh_text(w, " ()[]:\"$`;&|<>*?"))
                        .collect();
                    format!("({})", words.join(" "))
                }
                Values::Files => "_files".to_string(),
                Values::Dirs => "_directories".to_string(),
            };
            let _ = write!(spec, "{colons}{message}:{action}");
        }
        spec.push('\'');
        let _ = writeln!(specs, "    {prefix}{names}{spec}");
    }

    let mut s = String::new();
    s.push_str(ZSH_HEAD);
    let _ = write!(
        s,
        r#"
_ringdl() {{
  local -a args
  args=(
{specs}    '*:URI or file:_files'
  )
  # -S: `--` ends the options. No -s: a short option's value may be attached (`-Zfalse`), so
  # letters do not stack.
  _arguments -S : $args
}}

# Register for aria2c unless a completion for aria2c exists (see the top of this file).
if (( ! $+functions[_aria2c] )) && [[ -z ${{_comps[aria2c]-}} ]]; then
  compdef _ringdl aria2c
fi

if [[ $funcstack[1] == _ringdl ]]; then
  _ringdl "$@"
else
  compdef _ringdl ringdl
fi
"#
    );
    s
}

pub(super) const ZSH_HEAD: &str = "\
#compdef ringdl
# zsh completion for ringdl.
# Generated from ringdl's option table by `ringdl --generate=zsh`; do not edit.
#
# Install as _ringdl in a directory of $fpath (Debian: /usr/share/zsh/vendor-completions), or
# source it after compinit.
#
# aria2c: zsh replaces an alias by its value before completing (unless the COMPLETE_ALIASES option
# is set), so `alias aria2c=ringdl` completes like ringdl with nothing more. For COMPLETE_ALIASES
# users and for functions or scripts named aria2c, this file also registers _ringdl for aria2c, but
# only when no completion for aria2c (an _aria2c function) is defined.
";

// ---------------------------------------------------------------------------------------------
// fish

pub(super) fn fish_quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

pub(super) fn fish(opts: &[OptDef]) -> String {
    let mut s = String::new();
    s.push_str(FISH_HEAD);
    s.push_str("\n\n");
    if opts
        .iter()
        .any(|o| o.arg != ArgKind::None && values(o) == Values::Dirs)
    {
        s.push_str(FISH_DIRS);
    }
    for o in opts {
        let mut line = String::from("complete -c ringdl");
        if let Some(c) = o.short {
            let _ = write!(line, " -s {}", fish_quote(&c.to_string()));
        }
        let _ = write!(
            line,
            " -l {} -d {}",
            fish_quote(o.name),
            fish_quote(summary(o))
        );
        // -r: the value may be the next word; -f: no file names as values. Optional values are
        // only ever attached (`--name=v`), which fish completes from -a without -r.
        let takes_next = o.arg == ArgKind::Required;
        match (o.arg, values(o)) {
            (ArgKind::None, _) => {}
            (_, Values::Files) if takes_next => line.push_str(" -r -F"),
            (_, Values::Files) => line.push_str(" -F"),
            (_, Values::Dirs) => {
                let _ = write!(
                    line,
                    " {} -a '(__ringdl_dirs)'",
                    if takes_next { "-x" } else { "-f" }
                );
            }
            (_, Values::Words(words)) => {
                let words: Vec<String> = words
                    .iter()
                    .map(|w| w.replace(['\'', '\\', ' '], ""))
                    .collect();
                let _ = write!(
                    line,
                    " {} -a {}",
                    if takes_next { "-x" } else { "-f" },
                    fish_quote(&words.join(" "))
                );
            }
            (_, Values::Free) => line.push_str(if takes_next { " -x" } else { "" }),
        }
        s.push_str(&line);
        s.push('\n');
    }
    s.push_str(FISH_ALIAS);
    s
}

pub(super) const FISH_HEAD: &str = "\
# fish completion for ringdl.
# Generated from ringdl's option table by `ringdl --generate=fish`; do not edit.
#
# Install as /usr/share/fish/vendor_completions.d/ringdl.fish. Arguments that are not options
# complete as files (fish's default).
#
# aria2c: in fish, `alias aria2c=ringdl` defines a function aria2c that wraps ringdl, and fish
# completes a wrapping function with the completions of what it wraps, so the alias needs nothing
# more. For an aria2c function written by hand without --wraps, the last line below makes aria2c
# complete like ringdl, but only when aria2c itself is not installed, so that aria2's own completions
# stay with aria2.";

pub(super) const FISH_DIRS: &str = "\
# Directories, for the value being completed without the `--name=` before it.
function __ringdl_dirs
    __fish_complete_directories (commandline -ct | string replace -r -- '^-[^=]*=' '')
end

";

pub(super) const FISH_ALIAS: &str = "\
if not command -q aria2c
    complete -c aria2c --wraps ringdl
end
";
