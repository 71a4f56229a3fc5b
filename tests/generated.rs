//! The committed man page and completions are what `ringdl --generate=...` prints now, the man page
//! renders without a warning, and each completion script loads in its shell and completes from the
//! option table.
//!
//! `RINGDL_REGENERATE=1 cargo test --test tests generated::committed` rewrites the committed files.
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use ringdl::cli::defs::{self, ArgKind, OptDef, ValueKind};
use ringdl::cli::generate::{generate, Target};

use crate::support::{have_program, require_peer, run_program, test_name, TestDir, RUN_TIMEOUT};

fn committed(t: Target) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(t.committed_path())
}

#[test]
fn committed_files_are_current() {
    let regenerate = std::env::var("RINGDL_REGENERATE").as_deref() == Ok("1");
    let mut stale = Vec::new();
    for t in Target::ALL {
        let path = committed(t);
        let fresh = generate(t);
        if regenerate {
            std::fs::write(&path, &fresh)
                .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
            eprintln!("regenerated {}", t.committed_path());
            continue;
        }
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        if old != fresh {
            let line = old
                .lines()
                .zip(fresh.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(old.lines().count().min(fresh.lines().count()))
                + 1;
            stale.push(format!(
                "{} differs from `ringdl --generate={}` (first at line {line}); run\n    cargo run -- --generate={} > {}",
                t.committed_path(),
                t.name(),
                t.name(),
                t.committed_path()
            ));
        }
    }
    assert!(
        stale.is_empty(),
        "{}\nor regenerate them all with\n    RINGDL_REGENERATE=1 cargo test --test tests generated::committed",
        stale.join("\n")
    );
}

#[test]
fn the_binary_prints_what_generate_returns() {
    let dir = TestDir::new();
    let bin = Path::new(env!("CARGO_BIN_EXE_ringdl"));
    for t in Target::ALL {
        let arg = format!("--generate={}", t.name());
        let run = run_program(bin, &dir, &[&arg], RUN_TIMEOUT);
        assert_eq!(run.code(), 0, "{run}");
        assert!(
            run.stdout == generate(t),
            "ringdl {arg} printed something else than generate()"
        );
        assert_eq!(run.stderr, "");
    }
    let run = run_program(bin, &dir, &["--generate=nonsense"], RUN_TIMEOUT);
    assert_eq!(run.code(), 28, "{run}");
    assert!(
        run.stdout.is_empty() && run.stderr.contains("--generate"),
        "{run}"
    );
}

/// Runs `program args` in `dir` with the environment given, stdin closed.
fn run(program: &str, args: &[&str], dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(dir).stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output()
        .unwrap_or_else(|e| panic!("run {program}: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn man_page_renders_without_warnings() {
    if !require_peer("groff", have_program("groff")) {
        return;
    }
    let dir = TestDir::new();
    let page = committed(Target::Man);
    let page = page.to_str().expect("UTF-8 path");
    // The terminal device man(1) uses, and groff's default (PostScript), which knows other glyphs.
    for device in ["-Tutf8", "-Tps"] {
        let out = run(
            "groff",
            &["-ww", "-z", "-man", device, page],
            dir.path(),
            &[],
        );
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "groff -ww -z -man {device} {page}: {}\n{}",
            out.status,
            text(&out.stderr)
        );
    }
    // And the words a reader looks for survive the formatting.
    let out = run(
        "groff",
        &["-man", "-Tascii", "-P-cbou", page],
        dir.path(),
        &[],
    );
    let shown = text(&out.stdout);
    let headings = [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "EXIT STATUS",
        "ENVIRONMENT",
        "FILES",
        "EXAMPLES",
        "COMPATIBILITY",
    ];
    for heading in headings {
        assert!(
            shown.contains(&format!("\n{heading}\n")),
            "no {heading} section"
        );
    }
    for o in defs::OPTIONS.iter().chain(defs::OWN_OPTIONS) {
        assert!(
            shown.contains(&format!("--{}", o.name)),
            "--{} not in the rendered page",
            o.name
        );
    }
}

/// An option the completion tests can ask about: the first required-argument option whose values are
/// a fixed list, and those values.
fn choice_option() -> Option<(&'static OptDef, Vec<&'static str>)> {
    defs::OPTIONS.iter().find_map(|o| match o.value {
        ValueKind::Choice(words) if o.arg == ArgKind::Required && o.value_name != "DIR" => {
            Some((o, words.to_vec()))
        }
        _ => None,
    })
}

/// Long names of the table's options that start with `prefix`, sorted.
fn longs_starting(prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = defs::OPTIONS
        .iter()
        .chain(defs::OWN_OPTIONS)
        .map(|o| format!("--{}", o.name))
        .filter(|n| n.starts_with(prefix))
        .collect();
    v.sort();
    v
}

fn sorted_lines(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.lines().map(str::to_string).collect();
    v.sort();
    v
}

/// Runs `script` with `bash --norc` after sourcing the committed completion, in `dir`.
fn bash(dir: &TestDir, script: &str) -> String {
    let file = committed(Target::Bash);
    let full = format!("source {} || exit 9\n{script}", file.display());
    let out = run(
        "bash",
        &["--norc", "--noprofile", "-c", &full],
        dir.path(),
        &[],
    );
    assert!(
        out.status.success(),
        "bash: {}\n{script}\n{}",
        out.status,
        text(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "bash printed errors:\n{}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// What `_ringdl` offers for the words given (the last one being completed).
fn bash_complete(dir: &TestDir, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let script = format!(
        "COMP_WORDS=({}); COMP_CWORD={}; _ringdl; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        quoted.join(" "),
        words.len() - 1
    );
    let mut v = sorted_lines(&bash(dir, &script));
    v.retain(|l| !l.is_empty());
    v
}

#[test]
fn bash_completion_loads_and_completes() {
    let dir = TestDir::new();
    let file = committed(Target::Bash);
    let out = run(
        "bash",
        &["-n", file.to_str().expect("UTF-8 path")],
        dir.path(),
        &[],
    );
    assert!(out.status.success(), "bash -n: {}", text(&out.stderr));

    // Registered for ringdl, and for aria2c when nothing completes aria2c yet...
    assert_eq!(
        bash(&dir, "complete -p ringdl; complete -p aria2c"),
        "complete -F _ringdl ringdl\ncomplete -F _ringdl aria2c\n"
    );
    // ...but aria2's own completion, when installed, keeps aria2c.
    let file = file.display();
    let out = run(
        "bash",
        &[
            "--norc",
            "-c",
            &format!("complete -F _aria2c aria2c; source {file}; complete -p aria2c"),
        ],
        dir.path(),
        &[],
    );
    assert_eq!(text(&out.stdout), "complete -F _aria2c aria2c\n");

    // Option names.
    assert_eq!(
        bash_complete(&dir, &["ringdl", "--ma"]),
        longs_starting("--ma")
    );
    assert_eq!(
        bash_complete(&dir, &["ringdl", "--"]).len(),
        defs::OPTIONS.len() + defs::OWN_OPTIONS.len()
    );
    // Values after `=`, split off by COMP_WORDBREAKS or not, and in the next word.
    if let Some((o, words)) = choice_option() {
        let long = format!("--{}", o.name);
        let mut expected: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        expected.sort();
        assert_eq!(bash_complete(&dir, &["ringdl", &long, "="]), expected);
        assert_eq!(
            bash_complete(&dir, &["ringdl", &long]),
            longs_starting(&long)
        );
        assert_eq!(bash_complete(&dir, &["ringdl", &long, ""]), expected);
        let attached: Vec<String> = expected.iter().map(|w| format!("{long}={w}")).collect();
        assert_eq!(
            bash_complete(&dir, &["ringdl", &format!("{long}=")]),
            attached
        );
    }
    // Files for URIs/files, directories for a DIR option.
    std::fs::create_dir(dir.join("sub")).expect("mkdir");
    std::fs::write(dir.join("file.txt"), b"").expect("write");
    assert_eq!(bash_complete(&dir, &["ringdl", ""]), ["file.txt", "sub"]);
    if let Some(o) = defs::OPTIONS
        .iter()
        .find(|o| o.value_name == "DIR" && o.arg == ArgKind::Required)
    {
        assert_eq!(
            bash_complete(&dir, &["ringdl", &format!("--{}", o.name), ""]),
            ["sub"]
        );
    }
    // A boolean's value is only ever attached: the next word is a URI or a file again.
    if let Some(o) = defs::OPTIONS
        .iter()
        .find(|o| o.arg == ArgKind::Optional && o.value == ValueKind::Bool)
    {
        assert_eq!(
            bash_complete(&dir, &["ringdl", &format!("--{}", o.name), ""]),
            ["file.txt", "sub"]
        );
        assert_eq!(
            bash_complete(&dir, &["ringdl", &format!("--{}", o.name), "=", "t"]),
            ["true"]
        );
    }
}

/// A shell CI does not install yet: run the test when it is here, say loudly that it was skipped
/// when it is not (even with RINGDL_REQUIRE_PEERS=1).
fn optional_shell(shell: &str) -> bool {
    if have_program(shell) {
        return true;
    }
    eprintln!("SKIPPED: {}: {shell} not installed", test_name());
    false
}

#[test]
fn zsh_completion_parses_and_registers() {
    if !optional_shell("zsh") {
        return;
    }
    let dir = TestDir::new();
    let file = committed(Target::Zsh);
    let file = file.to_str().expect("UTF-8 path");
    let out = run("zsh", &["-n", file], dir.path(), &[]);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "zsh -n: {}",
        text(&out.stderr)
    );
    let script = format!(
        "autoload -Uz compinit && compinit -u -d {dump} && source {file} && print -r -- $_comps[ringdl] $_comps[aria2c]",
        dump = dir.join("zcompdump").display()
    );
    let out = run("zsh", &["-f", "-c", &script], dir.path(), &[]);
    assert_eq!(
        (text(&out.stdout).as_str(), text(&out.stderr).as_str()),
        ("_ringdl _ringdl\n", ""),
        "zsh did not register the completion"
    );
    // A completion of aria2's own keeps aria2c.
    let script = script.replace("&& source", "&& _aria2c() { } && source");
    let out = run("zsh", &["-f", "-c", &script], dir.path(), &[]);
    assert_eq!(text(&out.stdout), "_ringdl\n", "{}", text(&out.stderr));
}

/// Runs `script` with fish (no user configuration) in `dir`, with `PATH` set to `path`; its output.
fn fish(dir: &TestDir, script: &str, path: &str) -> String {
    // By its full path: PATH is what the script should see.
    let fish = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("fish"))
        .find(|p| p.is_file())
        .expect("fish on PATH");
    let out = Command::new(&fish)
        .args(["--no-config", "-c", script])
        .current_dir(dir.path())
        .env("PATH", path)
        .stdin(Stdio::null())
        .output()
        .expect("run fish");
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "fish: {}\n{script}\n{}",
        out.status,
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The first column of fish's completions (`complete -C` output), sorted.
fn fish_words(output: &str) -> Vec<String> {
    let mut v: Vec<String> = output
        .lines()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn fish_completion_parses_and_completes() {
    if !optional_shell("fish") {
        return;
    }
    let dir = TestDir::new();
    let file = committed(Target::Fish);
    let path = std::env::var("PATH").unwrap_or_default();
    let checked = fish(
        &dir,
        &format!("fish --no-execute {}", file.display()),
        &path,
    );
    assert_eq!(checked, "");
    let source = format!("source {};", file.display());
    let complete = |line: &str, path: &str| {
        fish_words(&fish(&dir, &format!("{source} complete -C '{line}'"), path))
    };
    assert_eq!(complete("ringdl --ma", &path), longs_starting("--ma"));
    let Some((o, words)) = choice_option() else {
        return;
    };
    let long = format!("--{}", o.name);
    let mut attached: Vec<String> = words.iter().map(|w| format!("{long}={w}")).collect();
    attached.sort();
    assert_eq!(complete(&format!("ringdl {long}="), &path), attached);

    // With aria2c not installed, an aria2c function written without --wraps completes like ringdl.
    let bin = TestDir::new();
    assert_eq!(complete(&format!("aria2c {long}="), &bin.arg()), attached);

    // fish's own `alias aria2c=ringdl` wraps ringdl, so the completion fish loads for an installed
    // ringdl serves aria2c too.
    let ringdl = bin.join("ringdl");
    std::fs::write(&ringdl, "#!/bin/sh\n").expect("write fake ringdl");
    std::fs::set_permissions(&ringdl, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let completions = file
        .parent()
        .expect("completions dir")
        .display()
        .to_string();
    let script = format!(
        "set -p fish_complete_path {completions}; alias aria2c=ringdl; complete -C 'aria2c {long}='"
    );
    assert_eq!(fish_words(&fish(&dir, &script, &bin.arg())), attached);
}
