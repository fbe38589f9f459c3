//! `completions` and `man`: generated from the clap definitions and the
//! pages of `cli::PAGES`; they touch no /proc.

use super::Outcome;
use crate::cli;
use crate::error::{Error, Facility, Result};
use crate::resolve::ManRequest;

/// Print a completion script for the shell.
pub fn completions(shell: clap_complete::Shell) -> Result<Outcome> {
    let mut cmd = cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "vdsoctl", &mut buf);
    write_stdout(&buf)
}

/// Print a man page (roff): vdsoctl(1), or vdsoctl-COMMAND(1).
pub fn man(req: &ManRequest) -> Result<Outcome> {
    // The resolve step admits only the pages' names: a page that cannot be
    // rendered is a fault of vdsoctl's own, not of the command line.
    let page = man_page(req.page).ok_or_else(|| Error::Facility {
        errno: None,
        what: Facility::ManPage { page: req.page },
        hint: "please report it".into(),
    })?;
    write_stdout(page.as_bytes())
}

/// Text for roff: backslashes and hyphens escaped, no line starting with
/// a control character.
fn roff(text: &str) -> String {
    let s = text.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

/// The man page of `name` (`vdsoctl` or a subcommand): clap_mangen's
/// NAME, SYNOPSIS, DESCRIPTION, OPTIONS (and COMMANDS), then EXIT STATUS,
/// ENVIRONMENT, PRIVILEGES, EXAMPLES and SEE ALSO from [`cli::PAGES`].
pub fn man_page(name: &str) -> Option<String> {
    let page = cli::page(name)?;
    let mut root = cli::command().disable_help_subcommand(true);
    root.build();
    let overview = name == "vdsoctl";
    let cmd = if overview { root.clone() } else { root.find_subcommand(name)?.clone() };
    let title = if overview { "VDSOCTL".to_string() } else { format!("VDSOCTL-{}", name.to_uppercase()) };
    // The after_help text is `--help`'s: the page has its own sections for it.
    let man = clap_mangen::Man::new(cmd.clone().after_help("").after_long_help("")).title(title);
    let mut buf = Vec::new();
    type Section = fn(&clap_mangen::Man, &mut dyn std::io::Write) -> std::io::Result<()>;
    let sections: [Section; 4] = [
        clap_mangen::Man::render_title,
        clap_mangen::Man::render_name_section,
        clap_mangen::Man::render_synopsis_section,
        clap_mangen::Man::render_description_section,
    ];
    for render in sections {
        render(&man, &mut buf).ok()?;
    }
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut buf).ok()?;
    }
    if overview {
        man.render_subcommands_section(&mut buf).ok()?;
    }
    let mut s = String::from_utf8(buf).ok()?;
    s += ".SH \"EXIT STATUS\"\n";
    for (code, what) in page.exit {
        s += &format!(".TP\n\\fB{}\\fR\n{}\n", roff(code), roff(what));
    }
    s += ".SH ENVIRONMENT\n";
    for (var, what) in cli::ENVIRONMENT {
        s += &format!(".TP\n\\fB{var}\\fR\n{}\n", roff(what));
    }
    s += &format!(".SH PRIVILEGES\n{}\n", roff(page.privileges));
    s += ".SH EXAMPLES\n";
    for (line, what) in page.examples {
        s += &format!(".TP\n\\fB{}\\fR\n{}\n", roff(line), roff(what));
    }
    s += ".SH \"SEE ALSO\"\n";
    let others: Vec<String> = cli::PAGES
        .iter()
        .filter(|p| p.name != name)
        .map(|p| {
            if p.name == "vdsoctl" {
                "\\fBvdsoctl\\fR(1)".to_string()
            } else {
                format!("\\fBvdsoctl\\-{}\\fR(1)", p.name)
            }
        })
        .collect();
    s += &others.join(", ");
    s += "\n";
    Some(s)
}

fn write_stdout(buf: &[u8]) -> Result<Outcome> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(buf) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Stdout { source: e }),
        _ => Ok(Outcome::Clean),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_has_its_sections() {
        for page in cli::PAGES {
            let text = man_page(page.name).unwrap();
            for section in [
                ".SH NAME",
                ".SH SYNOPSIS",
                ".SH \"EXIT STATUS\"",
                ".SH ENVIRONMENT",
                ".SH EXAMPLES",
                ".SH \"SEE ALSO\"",
            ] {
                assert!(text.contains(section), "{}: no {section}", page.name);
            }
            assert!(!text.contains(".SH EXTRA"), "{}", page.name);
        }
        assert!(man_page("trace").unwrap().contains("\n.TH VDSOCTL-TRACE 1"));
        assert!(man_page("nope").is_none());
    }

    #[test]
    fn roff_escapes() {
        assert_eq!(roff("a-b \\x"), "a\\-b \\ex");
        assert_eq!(roff(".x"), "\\&.x");
    }
}
