//! The small quote-aware shell lexer behind `Bash(...)` rules.
//!
//! It splits a command line into simple commands the way bash reads it
//! (quotes, escapes, backslash-newline continuations, here-documents,
//! arithmetic, substitutions, redirections). Whatever it cannot read with
//! certainty sets [`ShellParse::unsure`]: such a command is allowed by no
//! prefix or exact rule, and deny rules are also checked against a loose
//! reading of its text ([`loose_tokens`]).

/// Redirection targets that don't write anywhere that matters.
const SAFE_REDIRECT_TARGETS: &[&str] = &["/dev/null", "/dev/stdout", "/dev/stderr"];

/// Shell words that may precede the real command of a simple command.
pub(super) const SHELL_KEYWORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "do", "while", "until", "time", "coproc",
];

/// A shell command split into simple commands.
#[derive(Debug, Default, PartialEq)]
pub(super) struct ShellParse {
    /// Each simple command's words, quotes removed.
    pub segments: Vec<Vec<String>>,
    /// Has command/process substitution, output redirection to a file, a
    /// here-document that expands commands, or a `${...}` the lexer doesn't
    /// understand: only `Bash` / `Bash(*)` can allow it.
    pub opaque: bool,
    /// Unterminated quote or substitution, or a redirection without a target.
    pub malformed: bool,
    /// The lexer may not read this the way bash does (arithmetic, odd
    /// here-document delimiters, continuations in here-documents, brace, glob
    /// or `$` expansion in a command name, ...): no prefix or exact rule allows
    /// it, and deny rules also look at its loose reading.
    pub unsure: bool,
    /// A command name is made by expansion (`$(printf r)m`, `$x`, `/bin/r?`,
    /// `{rm,x}`): which command runs is known only when it runs, so no deny
    /// or ask rule can be sure it does not cover it.
    pub name_hidden: bool,
}

impl ShellParse {
    /// Whether prefix/exact allow rules may allow this command at all.
    pub(super) fn allowable(&self) -> bool {
        !self.opaque && !self.malformed && !self.unsure && !self.segments.is_empty()
    }
}

/// Lexes `src` as bash would read it.
pub(super) fn parse_shell(src: &str) -> ShellParse {
    Lexer {
        chars: src.chars().collect(),
        ..Lexer::default()
    }
    .run()
}

/// Characters that end a loose token: every shell operator, quote, expansion
/// and path character, so a command name hidden anywhere becomes a token.
fn loose_separator(c: char) -> bool {
    c.is_whitespace() || "'\"\\`$;&|()<>{}[],=#!*?/:~@%^+".contains(c)
}

/// Loose readings of a command text for deny rules: its tokens with quotes
/// and backslashes kept as separators, with them removed (so `r\m` and
/// `"r"m` read `rm`), and also with `$'...'` decoded and `${name:-` openers
/// and `}` removed (so `$'\x72m'` and `${x:-r}m` read `rm`), and with
/// command substitutions removed, as if they printed nothing (so
/// `r$(true)m` reads `rm`).
pub(super) fn loose_tokens(src: &str) -> [Vec<String>; 4] {
    let split = |s: &str| -> Vec<String> {
        s.split(loose_separator)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect()
    };
    let joined: String = src
        .replace("\\\n", "")
        .chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect();
    let decoded: String = decode_ansi_c(&src.replace("\\\n", ""))
        .chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect();
    let defaults = without_parameter_openers(&decoded);
    let unsubstituted = without_substitutions(&joined);
    [
        split(src),
        split(&joined),
        split(&defaults),
        split(&unsubstituted),
    ]
}

/// `text` without its `$(...)` and `` `...` `` substitutions (parentheses
/// counted, quotes not: this is a loose reading).
fn without_substitutions(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut k = 0;
    while let Some(&c) = chars.get(k) {
        if c == '`' {
            k += 1;
            while chars.get(k).is_some_and(|&c| c != '`') {
                k += 1;
            }
            k += 1;
        } else if c == '$' && chars.get(k + 1) == Some(&'(') {
            let mut depth = 0usize;
            k += 1;
            while let Some(&c) = chars.get(k) {
                k += 1;
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
            }
        } else {
            out.push(c);
            k += 1;
        }
    }
    out
}

/// `text` with every `$'...'` replaced by what it decodes to.
fn decode_ansi_c(text: &str) -> String {
    let mut lexer = Lexer {
        chars: text.chars().collect(),
        ..Lexer::default()
    };
    let mut out = String::new();
    while let Some(&c) = lexer.chars.get(lexer.i) {
        if c == '$' && lexer.chars.get(lexer.i + 1) == Some(&'\'') {
            lexer.word.clear();
            lexer.ansi_c_quote();
            out.push_str(&lexer.word);
        } else {
            out.push(c);
            lexer.i += 1;
        }
    }
    out
}

/// `text` without the `${name` (plus any `:-`, `=`, `+`, `?` operator) of each
/// parameter expansion and without `}`: what a default value reads as.
fn without_parameter_openers(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut k = 0;
    while let Some(&c) = chars.get(k) {
        if c == '}' {
            k += 1;
            continue;
        }
        if c != '$' || chars.get(k + 1) != Some(&'{') {
            out.push(c);
            k += 1;
            continue;
        }
        k += 2;
        if matches!(chars.get(k), Some('#' | '!')) {
            k += 1;
        }
        while chars
            .get(k)
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '@' | '*'))
        {
            k += 1;
        }
        if chars.get(k) == Some(&'[') {
            while chars.get(k).is_some_and(|&c| c != ']') {
                k += 1;
            }
            k += 1;
        }
        if chars.get(k) == Some(&':') {
            k += 1;
        }
        if matches!(chars.get(k), Some('-' | '=' | '+' | '?')) {
            k += 1;
        }
    }
    out
}

#[derive(Debug, Clone, Copy)]
enum Nest {
    /// `(`, `$(`, `<(` or `>(`; whether a `"` string resumes after it, and
    /// whether it is a substitution (part of a word).
    Paren {
        resume_dquote: bool,
        substitution: bool,
    },
    /// `case ... esac`: its `(` and `)` around patterns nest nothing.
    Case,
    /// `a=(...)`: after it the assignment word goes on.
    Array,
    /// `$((`, `((` (closed by `))`) or `$[` (closed by `]`).
    Arith {
        bracket: bool,
        depth: u32,
        resume_dquote: bool,
    },
}

#[derive(Debug)]
struct Heredoc {
    delim: String,
    strip_tabs: bool,
    /// Unquoted delimiter: the body undergoes expansion and continuation.
    expands: bool,
    /// How many parentheses were open at the operator.
    depth: usize,
}

/// What the next word completes.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
enum Pending {
    #[default]
    None,
    /// The target of an output redirection.
    Output,
    /// The word after `>&`: a descriptor when it is digits or `-`, else a file.
    DupOut,
    /// The word after `<&`.
    DupIn,
    /// The file of an input redirection (`<file`).
    Input,
    /// The word of a here-string (`<<<word`).
    HereString,
}

#[derive(Debug, Default)]
struct Lexer {
    chars: Vec<char>,
    i: usize,
    out: ShellParse,
    words: Vec<String>,
    word: String,
    word_started: bool,
    /// The current word contains a `$` expansion.
    word_dynamic: bool,
    /// The current word has an unquoted glob or brace character.
    word_globby: bool,
    /// Per word of the current segment: whether it may expand to other
    /// words (globs, braces, `$` expansions).
    globby: Vec<bool>,
    /// Per word of the current segment: whether it is a redirection operator
    /// or target.
    redir: Vec<bool>,
    pending: Pending,
    /// A substitution just ended inside a word: a `#` here is no comment.
    glued: bool,
    dquote: bool,
    /// Lexing an expanding here-document body: `"` is an ordinary character
    /// outside substitutions.
    body: bool,
    nest: Vec<Nest>,
    heredocs: Vec<Heredoc>,
}

impl Lexer {
    /// The index in `chars` of the `k`-th character as bash reads it:
    /// backslash-newline pairs are skipped (callers read escapes raw).
    fn pos(&self, k: usize) -> Option<usize> {
        let mut p = self.i;
        let mut left = k;
        loop {
            while self.chars.get(p) == Some(&'\\') && self.chars.get(p + 1) == Some(&'\n') {
                p += 2;
            }
            if p >= self.chars.len() {
                return None;
            }
            if left == 0 {
                return Some(p);
            }
            left -= 1;
            p += 1;
        }
    }

    fn peek(&self, k: usize) -> Option<char> {
        self.pos(k).map(|p| self.chars[p])
    }

    /// Consumes `k` (≥ 1) characters as bash reads them.
    fn bump(&mut self, k: usize) {
        self.i = match self.pos(k.saturating_sub(1)) {
            Some(p) => p + 1,
            None => self.chars.len(),
        };
    }

    /// The character right after the escaping backslash at `peek(0)`, taken
    /// raw (an escaped backslash does not start a continuation).
    fn escaped(&mut self) -> Option<char> {
        let p = self.pos(0)?;
        let next = self.chars.get(p + 1).copied();
        self.i = (p + if next.is_some() { 2 } else { 1 }).min(self.chars.len());
        next
    }

    fn run(mut self) -> ShellParse {
        while let Some(c) = self.peek(0) {
            if self.dquote {
                self.in_dquote(c);
            } else if let Some(Nest::Arith { .. }) = self.nest.last() {
                self.in_arith(c);
            } else {
                self.unquoted(c);
            }
        }
        if (self.dquote && !self.body) || !self.nest.is_empty() {
            self.out.malformed = true;
        }
        self.end_segment();
        if self.out.malformed {
            self.out.unsure = true;
        }
        self.out
    }

    fn push_char(&mut self, c: char) {
        self.word.push(c);
        self.word_started = true;
    }

    /// An unquoted character that may expand to something else.
    fn push_unquoted(&mut self, c: char) {
        if matches!(c, '*' | '?' | '[' | '{') {
            self.word_globby = true;
        }
        self.push_char(c);
    }

    fn end_word(&mut self) {
        self.glued = false;
        if !self.word_started {
            return;
        }
        let word = std::mem::take(&mut self.word);
        let dynamic = std::mem::take(&mut self.word_dynamic);
        let globby = std::mem::take(&mut self.word_globby);
        self.word_started = false;
        let target = self.pending != Pending::None;
        match std::mem::take(&mut self.pending) {
            Pending::None => {}
            Pending::Output => self.check_target(&word, dynamic),
            Pending::DupOut | Pending::DupIn if !dynamic && is_fd_word(&word) => {
                // A descriptor: kept on its operator (`2>&1`).
                if let Some(op) = self.words.last_mut() {
                    op.push_str(&word);
                    return;
                }
            }
            // `>&file` opens the file for stdout and stderr, like `&>file`.
            Pending::DupOut => self.check_target(&word, dynamic),
            Pending::DupIn | Pending::HereString => {}
            Pending::Input => self.check_input(&word, dynamic),
        }
        if word == "case" && !target && self.command_position_words() {
            self.nest.push(Nest::Case);
        }
        self.words.push(word);
        // `$x rm`, `${x:-rm}`: an expansion may be empty or any word.
        self.globby.push(globby || dynamic);
        self.redir.push(target);
    }

    /// Reading `/dev/tcp/host/port` makes bash open a connection.
    fn check_input(&mut self, word: &str, dynamic: bool) {
        if dynamic || word.starts_with("/dev/tcp/") || word.starts_with("/dev/udp/") {
            self.out.opaque = true;
        }
    }

    fn check_target(&mut self, word: &str, dynamic: bool) {
        if dynamic || !SAFE_REDIRECT_TARGETS.contains(&word) {
            self.out.opaque = true;
        }
    }

    fn end_segment(&mut self) {
        self.end_word();
        if self.pending != Pending::None {
            self.pending = Pending::None;
            self.out.malformed = true;
        }
        let globby = std::mem::take(&mut self.globby);
        let redir = std::mem::take(&mut self.redir);
        if self.body && self.nest.is_empty() {
            // Here-document text outside substitutions runs nothing.
            self.words.clear();
            return;
        }
        if self.words.is_empty() {
            return;
        }
        // A command name that brace, glob or `$` expansion may turn into
        // another command, or none (`{rm,x}`, `/bin/r?`, `$x rm`).
        let mut command = None;
        let mut k = 0;
        while let Some(w) = self.words.get(k) {
            if w == "function" {
                // `function f { ... }`: the body's first command comes later.
                k += 2;
            } else if redir.get(k).copied().unwrap_or(false)
                || is_assignment(w)
                || SHELL_KEYWORDS.contains(&w.as_str())
            {
                k += 1;
            } else {
                command = Some(k);
                break;
            }
        }
        if let Some(k) = command
            && globby.get(k).copied().unwrap_or(false)
            && !matches!(self.words[k].as_str(), "[" | "[[")
        {
            self.out.unsure = true;
            self.out.name_hidden = true;
        }
        // `case` patterns end in a `)` that closes no parenthesis.
        if command.is_some_and(|k| self.words[k] == "case") {
            self.out.unsure = true;
        }
        if command.is_some_and(|k| self.words[k] == "esac")
            && matches!(self.nest.last(), Some(Nest::Case))
        {
            self.nest.pop();
        }
        self.out.segments.push(std::mem::take(&mut self.words));
    }

    /// Pushes a redirection operator as a word (after `end_word`).
    fn push_operator(&mut self, op: String) {
        if self.pending != Pending::None {
            self.pending = Pending::None;
            self.out.malformed = true;
        }
        self.words.push(op);
        self.globby.push(false);
        self.redir.push(true);
    }

    fn unquoted(&mut self, c: char) {
        match c {
            ' ' | '\t' => {
                self.end_word();
                self.bump(1);
            }
            '\n' => {
                self.end_segment();
                self.bump(1);
                if self.heredocs.iter().any(|d| d.depth < self.nest.len()) {
                    // A newline inside a substitution with a here-document
                    // pending outside it: bash versions differ on the body.
                    self.out.unsure = true;
                }
                self.skip_heredoc_bodies();
            }
            ';' | '|' => {
                self.end_segment();
                self.bump(1);
            }
            '&' if self.peek(1) == Some('>') => {
                self.end_word();
                self.bump(2);
                let mut op = String::from("&>");
                if self.peek(0) == Some('>') {
                    op.push('>');
                    self.bump(1);
                }
                self.push_operator(op);
                self.pending = Pending::Output;
            }
            '&' => {
                self.end_segment();
                self.bump(1);
            }
            // `((` opening a command is arithmetic, where `<<` is a shift and
            // `#` no comment.
            '(' if self.peek(1) == Some('(') && self.command_position() => {
                self.out.unsure = true;
                self.nest.push(Nest::Arith {
                    bracket: false,
                    depth: 0,
                    resume_dquote: false,
                });
                self.push_char('(');
                self.push_char('(');
                self.bump(2);
            }
            '(' if matches!(self.nest.last(), Some(Nest::Case)) => {
                self.end_segment();
                self.bump(1);
            }
            '(' => {
                // `a=(...)`: an array, after which the word goes on.
                let array = self.word_started && self.word.ends_with('=');
                self.end_segment();
                if array {
                    self.nest.push(Nest::Array);
                } else {
                    self.nest.push(Nest::Paren {
                        resume_dquote: false,
                        substitution: false,
                    });
                }
                self.bump(1);
            }
            ')' => {
                // Ends the segment first: an `esac` before it closes its `case`.
                self.end_segment();
                self.bump(1);
                if let Some(Nest::Case) = self.nest.last() {
                    // The end of a `case` pattern.
                    return;
                }
                if let Some(Nest::Array) = self.nest.last() {
                    self.nest.pop();
                    // What follows is still part of an assignment word.
                    self.push_char('_');
                    self.push_char('=');
                    return;
                }
                if let Some(Nest::Paren {
                    resume_dquote,
                    substitution,
                }) = self.nest.last().copied()
                {
                    self.nest.pop();
                    if self.heredocs.iter().any(|d| d.depth > self.nest.len()) {
                        // A here-document opened in a substitution that ends
                        // before its body: bash versions read it differently.
                        self.out.unsure = true;
                    }
                    self.dquote = resume_dquote;
                    // `$(...)#x` is one word: the `#` starts no comment.
                    self.glued = substitution;
                    if substitution {
                        // Its output is part of a word, maybe the command name.
                        self.word_started = true;
                        self.word_dynamic = true;
                    }
                }
            }
            '`' => self.backtick(),
            '\'' => self.single_quote(),
            '"' => {
                self.word_started = true;
                self.dquote = true;
                self.bump(1);
            }
            '\\' => match self.escaped() {
                Some(next) => self.push_char(next),
                None => self.push_char('\\'),
            },
            '$' => self.dollar(),
            '#' if !self.word_started && !self.glued => {
                // A comment runs to the end of the physical line.
                self.i = self.pos(0).unwrap_or(self.i);
                while self.chars.get(self.i).is_some_and(|&c| c != '\n') {
                    self.i += 1;
                }
            }
            '>' => self.redirect_out(),
            '<' => self.redirect_in(),
            _ => {
                self.push_unquoted(c);
                self.bump(1);
            }
        }
    }

    /// Whether a command (or `for`) starts here: only keywords precede.
    fn command_position(&self) -> bool {
        !self.word_started && self.command_position_words()
    }

    fn command_position_words(&self) -> bool {
        self.words
            .iter()
            .all(|w| w == "for" || SHELL_KEYWORDS.contains(&w.as_str()))
    }

    fn in_dquote(&mut self, c: char) {
        match c {
            '"' if self.body && self.nest.is_empty() => {
                self.push_char(c);
                self.bump(1);
            }
            '"' => {
                self.dquote = false;
                self.bump(1);
            }
            '\\' => {
                let p = self.pos(0).unwrap_or(self.i);
                match self.chars.get(p + 1).copied() {
                    Some(next @ ('$' | '`' | '"' | '\\')) => {
                        self.push_char(next);
                        self.i = p + 2;
                    }
                    _ => {
                        self.push_char('\\');
                        self.i = p + 1;
                    }
                }
            }
            '`' => self.backtick(),
            '$' => self.dollar(),
            _ => {
                self.push_char(c);
                self.bump(1);
            }
        }
    }

    /// Inside `$((...))`, `((...))` or `$[...]`: no words, comments or
    /// here-documents, only expansions and the closing bracket.
    fn in_arith(&mut self, c: char) {
        let Some(Nest::Arith {
            bracket,
            depth,
            resume_dquote,
        }) = self.nest.last().copied()
        else {
            return;
        };
        let set_depth = |nest: &mut Vec<Nest>, d: u32| {
            if let Some(Nest::Arith { depth, .. }) = nest.last_mut() {
                *depth = d;
            }
        };
        match c {
            '(' | '[' if (c == '[') == bracket => {
                set_depth(&mut self.nest, depth + 1);
                self.push_char(c);
                self.bump(1);
            }
            ')' | ']' if (c == ']') == bracket => {
                if depth > 0 {
                    set_depth(&mut self.nest, depth - 1);
                    self.push_char(c);
                    self.bump(1);
                    return;
                }
                self.push_char(c);
                self.bump(1);
                if !bracket {
                    if self.peek(0) == Some(')') {
                        self.push_char(')');
                        self.bump(1);
                    } else {
                        // Bash then reads it as nested subshells instead.
                        self.out.unsure = true;
                    }
                }
                self.nest.pop();
                self.dquote = resume_dquote;
            }
            '`' => self.backtick(),
            '$' => self.dollar(),
            '"' => {
                self.dquote = true;
                self.bump(1);
            }
            '\'' => self.single_quote(),
            '\\' => match self.escaped() {
                Some(next) => self.push_char(next),
                None => self.push_char('\\'),
            },
            _ => {
                self.push_char(c);
                self.bump(1);
            }
        }
    }

    fn single_quote(&mut self) {
        self.word_started = true;
        self.bump(1);
        loop {
            match self.chars.get(self.i).copied() {
                None => {
                    self.out.malformed = true;
                    return;
                }
                Some('\'') => {
                    self.i += 1;
                    return;
                }
                Some(c) => {
                    self.word.push(c);
                    self.i += 1;
                }
            }
        }
    }

    /// `$'...'`: backslash escapes are decoded, so `$'\x72m'` reads `rm`.
    fn ansi_c_quote(&mut self) {
        self.word_started = true;
        self.bump(2);
        loop {
            match self.chars.get(self.i).copied() {
                None => {
                    self.out.malformed = true;
                    return;
                }
                Some('\'') => {
                    self.i += 1;
                    return;
                }
                Some('\\') => {
                    self.i += 1;
                    self.ansi_c_escape();
                }
                Some(c) => {
                    self.word.push(c);
                    self.i += 1;
                }
            }
        }
    }

    /// One escape of `$'...'`, after its backslash.
    fn ansi_c_escape(&mut self) {
        let Some(c) = self.chars.get(self.i).copied() else {
            self.word.push('\\');
            return;
        };
        self.i += 1;
        let simple = match c {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            '\\' | '\'' | '"' | '?' => Some(c),
            _ => None,
        };
        if let Some(ch) = simple {
            self.word.push(ch);
            return;
        }
        let digits = |lexer: &mut Lexer, radix: u32, max: usize| -> Option<u32> {
            let mut value = None;
            for _ in 0..max {
                let Some(d) = lexer.chars.get(lexer.i).and_then(|c| c.to_digit(radix)) else {
                    break;
                };
                value = Some(value.unwrap_or(0) * radix + d);
                lexer.i += 1;
            }
            value
        };
        let code = match c {
            '0'..='7' => {
                self.i -= 1;
                digits(self, 8, 3)
            }
            'x' => digits(self, 16, 2),
            'u' => digits(self, 16, 4),
            'U' => digits(self, 16, 8),
            'c' => {
                // Control characters: rare enough to just be unsure about.
                self.out.unsure = true;
                self.chars.get(self.i).map(|_| {
                    self.i += 1;
                    0
                })
            }
            _ => None,
        };
        match code {
            Some(code) => match char::from_u32(code) {
                // Bytes above 0x7f are not valid UTF-8 on their own.
                Some(ch) if code < 0x80 || matches!(c, 'u' | 'U') => self.word.push(ch),
                _ => self.out.unsure = true,
            },
            None => {
                self.word.push('\\');
                self.word.push(c);
            }
        }
    }

    /// `` `...` ``: bash unescapes `` \` ``, `\\` and `\$` (and `\"` inside
    /// double quotes) in the body, then reads it as a command of its own.
    fn backtick(&mut self) {
        self.end_segment();
        self.out.opaque = true;
        let mut k = self.pos(0).map_or(self.chars.len(), |p| p + 1);
        let mut body = String::new();
        let mut closed = false;
        while let Some(c) = self.chars.get(k).copied() {
            k += 1;
            match c {
                '`' => {
                    closed = true;
                    break;
                }
                '\\' => match self.chars.get(k).copied() {
                    Some(next @ ('`' | '\\' | '$')) => {
                        body.push(next);
                        k += 1;
                    }
                    Some('"') if self.dquote => {
                        body.push('"');
                        k += 1;
                    }
                    _ => body.push('\\'),
                },
                _ => body.push(c),
            }
        }
        self.i = k;
        if !closed {
            self.out.malformed = true;
        }
        self.glued = true;
        self.word_started = true;
        self.word_dynamic = true;
        let inner = parse_shell(&body);
        self.out.segments.extend(inner.segments);
        self.out.unsure |= inner.unsure;
        self.out.malformed |= inner.malformed;
    }

    fn dollar(&mut self) {
        match self.peek(1) {
            Some('(') if self.peek(2) == Some('(') => self.arith_expansion(false),
            Some('[') => self.arith_expansion(true),
            Some('(') => {
                self.end_segment();
                self.out.opaque = true;
                self.nest.push(Nest::Paren {
                    resume_dquote: self.dquote,
                    substitution: true,
                });
                self.dquote = false;
                self.bump(2);
            }
            Some('\'') if !self.dquote => self.ansi_c_quote(),
            Some('"') if !self.dquote => {
                self.word_started = true;
                self.dquote = true;
                self.bump(2);
            }
            Some('{') => self.braced_parameter(),
            _ => {
                self.push_char('$');
                self.word_dynamic = true;
                self.bump(1);
            }
        }
    }

    /// `$((` or `$[`: arithmetic. It may hold command substitutions, and
    /// bash may read `$((` as `$( (` instead.
    fn arith_expansion(&mut self, bracket: bool) {
        self.out.opaque = true;
        self.out.unsure = true;
        self.word_dynamic = true;
        self.nest.push(Nest::Arith {
            bracket,
            depth: 0,
            resume_dquote: self.dquote,
        });
        self.dquote = false;
        let opener = if bracket { "$[" } else { "$((" };
        for c in opener.chars() {
            self.push_char(c);
        }
        self.bump(opener.len());
    }

    /// `${...}`: a simple one is kept as part of the word; one with quotes,
    /// nesting or operators makes the command opaque and is lexed on as usual.
    fn braced_parameter(&mut self) {
        self.word_dynamic = true;
        let (Some(open), Some(start)) = (self.pos(1), self.pos(2)) else {
            self.push_char('$');
            self.bump(1);
            return;
        };
        // The scan stops at the first character a simple body can't hold,
        // so `${${${...` costs linear time, not quadratic.
        let close = self.chars[start..]
            .iter()
            .position(|&c| "'\"`\\${}()<>;&|\n".contains(c))
            .map(|p| start + p)
            .filter(|&end| self.chars[end] == '}');
        // `${x@P}` expands `x` as a prompt, command substitutions included.
        let simple = close.filter(|&end| {
            !self.chars[start..end]
                .windows(2)
                .any(|w| w[0] == '@' && w[1].is_ascii_alphabetic())
        });
        if let Some(end) = simple {
            self.push_char('$');
            for k in open..=end {
                self.push_char(self.chars[k]);
            }
            self.i = end + 1;
        } else {
            // Nested quotes and expansions: bash reads them by rules this
            // lexer only approximates.
            self.out.opaque = true;
            self.out.unsure = true;
            self.push_char('$');
            self.bump(1);
        }
    }

    /// Takes the current word as a file-descriptor number (`2` in `2>`) if it
    /// is one; otherwise ends it.
    fn take_fd_prefix(&mut self) -> String {
        if self.pending == Pending::None
            && !self.word.is_empty()
            && !self.word_dynamic
            && self.word.chars().all(|c| c.is_ascii_digit())
        {
            self.word_started = false;
            self.word_globby = false;
            return std::mem::take(&mut self.word);
        }
        self.end_word();
        String::new()
    }

    fn process_substitution(&mut self) {
        self.end_segment();
        self.out.opaque = true;
        self.nest.push(Nest::Paren {
            resume_dquote: false,
            substitution: true,
        });
        self.bump(1);
    }

    fn redirect_out(&mut self) {
        let mut op = self.take_fd_prefix();
        op.push('>');
        self.bump(1);
        if self.peek(0) == Some('(') {
            self.process_substitution();
            return;
        }
        if let Some(c @ ('>' | '|')) = self.peek(0) {
            op.push(c);
            self.bump(1);
        }
        if self.peek(0) == Some('&') {
            op.push('&');
            self.bump(1);
            self.push_operator(op);
            self.pending = Pending::DupOut;
            return;
        }
        self.push_operator(op);
        self.pending = Pending::Output;
    }

    fn redirect_in(&mut self) {
        let mut op = self.take_fd_prefix();
        op.push('<');
        self.bump(1);
        match self.peek(0) {
            Some('(') => self.process_substitution(),
            Some('<') => {
                op.push('<');
                self.bump(1);
                if self.peek(0) == Some('<') {
                    // Here-string: the next word is an ordinary word.
                    op.push('<');
                    self.bump(1);
                    self.push_operator(op);
                    self.pending = Pending::HereString;
                } else {
                    let strip_tabs = self.peek(0) == Some('-');
                    if strip_tabs {
                        op.push('-');
                        self.bump(1);
                    }
                    self.push_operator(op);
                    self.heredoc_delimiter(strip_tabs);
                }
            }
            Some('&') => {
                op.push('&');
                self.bump(1);
                self.push_operator(op);
                self.pending = Pending::DupIn;
            }
            Some('>') => {
                // `<>` opens the target for writing too.
                op.push('>');
                self.bump(1);
                self.push_operator(op);
                self.pending = Pending::Output;
            }
            _ => {
                self.push_operator(op);
                self.pending = Pending::Input;
            }
        }
    }

    /// Reads a here-document delimiter word as bash does: quotes removed,
    /// continuations joined; any quoting makes the body literal.
    fn heredoc_delimiter(&mut self, strip_tabs: bool) {
        while matches!(self.peek(0), Some(' ' | '\t')) {
            self.bump(1);
        }
        let mut delim = String::new();
        let mut quoted = false;
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')' => break,
                '\'' => {
                    quoted = true;
                    self.bump(1);
                    loop {
                        match self.chars.get(self.i).copied() {
                            None => {
                                self.out.malformed = true;
                                break;
                            }
                            Some('\'') => {
                                self.i += 1;
                                break;
                            }
                            Some(other) => {
                                delim.push(other);
                                self.i += 1;
                            }
                        }
                    }
                }
                '"' => {
                    quoted = true;
                    self.bump(1);
                    loop {
                        match self.peek(0) {
                            None => {
                                self.out.malformed = true;
                                break;
                            }
                            Some('"') => {
                                self.bump(1);
                                break;
                            }
                            Some('\\') => {
                                let p = self.pos(0).unwrap_or(self.i);
                                match self.chars.get(p + 1).copied() {
                                    Some(next @ ('$' | '`' | '"' | '\\')) => {
                                        delim.push(next);
                                        self.i = p + 2;
                                    }
                                    _ => {
                                        delim.push('\\');
                                        self.i = p + 1;
                                    }
                                }
                            }
                            Some(other) => {
                                if matches!(other, '$' | '`') {
                                    self.out.unsure = true;
                                }
                                delim.push(other);
                                self.bump(1);
                            }
                        }
                    }
                }
                '\\' => {
                    quoted = true;
                    if let Some(next) = self.escaped() {
                        delim.push(next);
                    }
                }
                '$' if matches!(self.peek(1), Some('\'' | '"')) => {
                    // `$'EOF'` and `$"EOF"` read as `EOF` in bash 5.2 (older
                    // versions differ): quoted, without the `$`.
                    self.out.unsure = true;
                    self.bump(1);
                }
                '$' | '`' => {
                    self.out.unsure = true;
                    delim.push(c);
                    self.bump(1);
                }
                _ => {
                    delim.push(c);
                    self.bump(1);
                }
            }
        }
        if delim.contains('\n') {
            self.out.unsure = true;
        }
        if delim.is_empty() && !quoted {
            self.out.malformed = true;
            return;
        }
        self.words.push(delim.clone());
        self.globby.push(false);
        self.redir.push(true);
        self.heredocs.push(Heredoc {
            delim,
            strip_tabs,
            expands: !quoted,
            depth: self.nest.len(),
        });
    }

    /// After a newline: skips the bodies of pending here-documents.
    fn skip_heredoc_bodies(&mut self) {
        for doc in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            let in_substitution = self.nest.iter().any(|n| {
                matches!(
                    n,
                    Nest::Paren {
                        substitution: true,
                        ..
                    }
                )
            });
            while self.i < self.chars.len() {
                let line_start = self.i;
                let line = self.heredoc_line(doc.expands);
                let candidate = if doc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if candidate == doc.delim {
                    break;
                }
                if in_substitution && !doc.delim.is_empty() && candidate.starts_with(&doc.delim) {
                    // Bash 5.2 ends the body at `EOF)` inside `$(...)`; the
                    // `)` and the rest of the line are code again.
                    self.out.unsure = true;
                    let tabs = line.len() - candidate.len();
                    let end = line_start + tabs + doc.delim.chars().count();
                    let raw: String = self.chars[line_start..end.min(self.chars.len())]
                        .iter()
                        .collect();
                    if candidate[doc.delim.len()..].starts_with(')')
                        && raw == line[..tabs + doc.delim.len()]
                    {
                        self.i = end;
                        break;
                    }
                }
                body.push_str(&line);
                body.push('\n');
            }
            if doc.expands && (body.contains('$') || body.contains('`')) {
                self.body_substitutions(&body);
            }
        }
    }

    /// Reads the substitutions of an expanding here-document body as bash
    /// runs them: as in a double-quoted string.
    fn body_substitutions(&mut self, body: &str) {
        let inner = Lexer {
            chars: body.chars().collect(),
            dquote: true,
            body: true,
            ..Lexer::default()
        }
        .run();
        if inner.opaque || !inner.segments.is_empty() {
            self.out.opaque = true;
            // Read by a second lexer: deny rules also look at the loose reading.
            self.out.unsure = true;
        }
        self.out.unsure |= inner.unsure || inner.malformed;
        // Quoted text in the body is just text.
        self.out.segments.extend(inner.segments);
    }

    /// One line of a here-document body. In an expanding body a
    /// backslash-newline joins lines (an escaped backslash does not).
    fn heredoc_line(&mut self, expands: bool) -> String {
        let mut line = String::new();
        while let Some(c) = self.chars.get(self.i).copied() {
            self.i += 1;
            match c {
                '\n' => break,
                '\\' if expands => match self.chars.get(self.i).copied() {
                    Some('\n') => {
                        self.i += 1;
                        self.out.unsure = true;
                    }
                    Some(next) => {
                        line.push('\\');
                        line.push(next);
                        self.i += 1;
                    }
                    None => line.push('\\'),
                },
                _ => line.push(c),
            }
        }
        line
    }
}

/// A `>&` / `<&` operand that names a descriptor rather than a file.
fn is_fd_word(word: &str) -> bool {
    let digits = word.strip_suffix('-').unwrap_or(word);
    word == "-" || (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
}

/// Whether `word` is a `NAME=value` (or `NAME+=value`) assignment.
pub(super) fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let name = name.strip_suffix('+').unwrap_or(name);
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
