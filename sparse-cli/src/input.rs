//! Where the command line's inputs come from: a file, or standard input for `-`.

use std::io::Read;
use std::path::Path;

/// The name standard input goes by in messages.
pub const STDIN: &str = "<stdin>";

/// `true` if `path` is `-`, which names standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// How `path` is named in messages: as given, or `<stdin>` for `-`.
pub fn name(path: &Path) -> String {
    if is_stdin(path) {
        STDIN.to_string()
    } else {
        path.display().to_string()
    }
}

/// The whole text of `path` (`-`: standard input), or an error naming it.
pub fn read_text(path: &Path) -> Result<String, String> {
    if is_stdin(path) {
        let mut text = String::new();
        std::io::stdin()
            .lock()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        Ok(text)
    } else {
        std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    }
}

/// Checks that at most one input reads standard input; `uses` are the inputs that name it, as
/// they are called in messages (e.g. `--encoding @-`).
pub fn stdin_once(uses: &[&str]) -> Result<(), String> {
    match uses {
        [] | [_] => Ok(()),
        [init @ .., last] => Err(format!(
            "standard input can be read only once, but {} and {last} {} name it",
            init.join(", "),
            if uses.len() == 2 { "both" } else { "all" }
        )),
    }
}
