//! A builder for one self-contained HTML5 report: a title, sections with headings, text,
//! tables and inline SVG charts, and embedded CSS. No scripts, fonts or images are fetched, so
//! the file opens the same offline, attached to a ticket, or printed.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use crate::chart::Chart;

/// Escapes text for use in HTML element content and in quoted attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters other than whitespace are not allowed in HTML text.
            c if c.is_control() && !matches!(c, '\n' | '\t' | '\r') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Horizontal alignment of a table column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Left-aligned, for names and text.
    Left,
    /// Right-aligned, for numbers, so that digits line up.
    Right,
}

/// A table with a header row; columns whose cells all look numeric are right-aligned unless
/// told otherwise with [`Table::align`].
///
/// A cell "looks numeric" when it starts with a digit (after an optional sign, `~` or `≈`),
/// which covers `1,234`, `42.3%`, `64 MiB` and `2 h 5 min` as printed by
/// [`crate::format`]; empty cells and `n/a` do not count either way.
#[derive(Clone, Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    caption: Option<String>,
    align: Vec<(usize, Align)>,
}

impl Table {
    /// A table with the given column headings.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        Table { header: header.into_iter().map(Into::into).collect(), ..Table::default() }
    }

    /// Appends a row. Rows shorter than the header are padded with empty cells; longer rows
    /// widen the table.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Self {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }

    /// [`Table::row`] for building by value.
    pub fn with_row<S: Into<String>>(mut self, cells: impl IntoIterator<Item = S>) -> Self {
        self.row(cells);
        self
    }

    /// Sets a caption shown above the table.
    pub fn caption(mut self, caption: impl Into<String>) -> Self {
        self.caption = Some(caption.into());
        self
    }

    /// Forces the alignment of column `column` (0-based).
    pub fn align(mut self, column: usize, align: Align) -> Self {
        self.align.push((column, align));
        self
    }

    /// Number of data rows (the header not counted).
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the table has no data rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    fn column_align(&self, column: usize) -> Align {
        if let Some(&(_, align)) = self.align.iter().rev().find(|(c, _)| *c == column) {
            return align;
        }
        let mut cells = self
            .rows
            .iter()
            .filter_map(|row| row.get(column))
            .map(|c| c.trim())
            .filter(|c| !c.is_empty() && *c != crate::format::NOT_AVAILABLE && *c != "-" && *c != "—");
        let mut any = false;
        let all_numeric = cells.all(|cell| {
            any = true;
            looks_numeric(cell)
        });
        if any && all_numeric {
            Align::Right
        } else {
            Align::Left
        }
    }

    fn render(&self, out: &mut String) {
        let columns = self.rows.iter().map(Vec::len).chain([self.header.len()]).max().unwrap_or(0);
        let aligns: Vec<Align> = (0..columns).map(|c| self.column_align(c)).collect();
        let class = |c: usize| if aligns[c] == Align::Right { " class=\"num\"" } else { "" };
        out.push_str("<div class=\"table-wrap\"><table>\n");
        if let Some(caption) = &self.caption {
            let _ = writeln!(out, "<caption>{}</caption>", escape_html(caption));
        }
        if !self.header.is_empty() {
            out.push_str("<thead><tr>");
            for c in 0..columns {
                let heading = self.header.get(c).map_or("", String::as_str);
                let _ = write!(out, "<th scope=\"col\"{}>{}</th>", class(c), escape_html(heading));
            }
            out.push_str("</tr></thead>\n");
        }
        out.push_str("<tbody>\n");
        for row in &self.rows {
            out.push_str("<tr>");
            for c in 0..columns {
                let cell = row.get(c).map_or("", String::as_str);
                let _ = write!(out, "<td{}>{}</td>", class(c), escape_html(cell));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table></div>\n");
    }
}

fn looks_numeric(cell: &str) -> bool {
    let rest = cell.trim_start_matches(['-', '+', '~', '≈', '−', '<', '>', '≤', '≥', ' ']);
    rest.starts_with(|c: char| c.is_ascii_digit())
        || (rest.starts_with('.') && rest[1..].starts_with(|c: char| c.is_ascii_digit()))
}

#[derive(Clone, Debug)]
enum Block {
    Subheading(String),
    Paragraph(String),
    Note(String),
    Code(String),
    KeyValues(Vec<(String, String)>),
    Table(Table),
    Chart(String),
}

/// One section of a report: a heading followed by blocks in the order they were added.
#[derive(Clone, Debug)]
pub struct Section {
    heading: String,
    blocks: Vec<Block>,
}

impl Section {
    /// Adds a smaller heading inside the section.
    pub fn subheading(&mut self, text: impl Into<String>) -> &mut Self {
        self.blocks.push(Block::Subheading(text.into()));
        self
    }

    /// Adds a paragraph of plain text (escaped; blank lines start new paragraphs).
    pub fn paragraph(&mut self, text: impl Into<String>) -> &mut Self {
        self.blocks.push(Block::Paragraph(text.into()));
        self
    }

    /// Adds a highlighted note, for warnings such as skipped corrupt trace lines.
    pub fn note(&mut self, text: impl Into<String>) -> &mut Self {
        self.blocks.push(Block::Note(text.into()));
        self
    }

    /// Adds preformatted text in a monospace font, e.g. the command line that produced the
    /// report or a configuration file.
    pub fn code(&mut self, text: impl Into<String>) -> &mut Self {
        self.blocks.push(Block::Code(text.into()));
        self
    }

    /// Adds a two-column table of names and values (trace name, duration, totals, …).
    pub fn key_values<K: Into<String>, V: Into<String>>(
        &mut self,
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> &mut Self {
        self.blocks.push(Block::KeyValues(pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect()));
        self
    }

    /// Adds a table.
    pub fn table(&mut self, table: Table) -> &mut Self {
        self.blocks.push(Block::Table(table));
        self
    }

    /// Adds a chart, rendered now and inlined as SVG.
    pub fn chart(&mut self, chart: &dyn Chart) -> &mut Self {
        self.blocks.push(Block::Chart(chart.to_svg()));
        self
    }

    fn render(&self, id: &str, out: &mut String) {
        let _ = writeln!(out, "<section id=\"{id}\">\n<h2>{}</h2>", escape_html(&self.heading));
        for block in &self.blocks {
            match block {
                Block::Subheading(text) => {
                    let _ = writeln!(out, "<h3>{}</h3>", escape_html(text));
                }
                Block::Paragraph(text) => {
                    for paragraph in text.split("\n\n").map(str::trim).filter(|p| !p.is_empty()) {
                        let _ = writeln!(out, "<p>{}</p>", escape_html(paragraph));
                    }
                }
                Block::Note(text) => {
                    let _ = writeln!(out, "<p class=\"note\">{}</p>", escape_html(text));
                }
                Block::Code(text) => {
                    let _ = writeln!(out, "<pre><code>{}</code></pre>", escape_html(text));
                }
                Block::KeyValues(pairs) => {
                    out.push_str("<div class=\"table-wrap\"><table class=\"kv\">\n<tbody>\n");
                    for (key, value) in pairs {
                        let _ = writeln!(
                            out,
                            "<tr><th scope=\"row\">{}</th><td>{}</td></tr>",
                            escape_html(key),
                            escape_html(value)
                        );
                    }
                    out.push_str("</tbody></table></div>\n");
                }
                Block::Table(table) => table.render(out),
                Block::Chart(svg) => {
                    let _ = writeln!(out, "<figure class=\"chart\">\n{svg}\n</figure>");
                }
            }
        }
        out.push_str("</section>\n");
    }
}

/// A whole report, rendered to one HTML file by [`Report::render`].
///
/// ```
/// use cloudcache_report::{Report, Table};
/// let mut report = Report::new("cloudcache sim: oltp.csv");
/// report.subtitle("LRU and ARC at 16 MiB to 4 GiB");
/// report
///     .section("Summary")
///     .key_values([("trace", "oltp.csv"), ("requests", "1,204,551")])
///     .table(Table::new(["policy", "hit ratio"]).with_row(["LRU", "61.2%"]));
/// let html = report.render();
/// assert!(html.starts_with("<!DOCTYPE html>") && html.contains("61.2%"));
/// ```
#[derive(Clone, Debug)]
pub struct Report {
    title: String,
    subtitle: Option<String>,
    footer: Option<String>,
    sections: Vec<Section>,
}

/// Reports with at least this many sections get a table of contents.
const CONTENTS_FROM_SECTIONS: usize = 4;

impl Report {
    /// An empty report with a title (shown as the page heading and the browser tab title).
    pub fn new(title: impl Into<String>) -> Self {
        Report { title: title.into(), subtitle: None, footer: None, sections: Vec::new() }
    }

    /// Sets a line shown under the title (what was run, on what, when).
    pub fn subtitle(&mut self, text: impl Into<String>) -> &mut Self {
        self.subtitle = Some(text.into());
        self
    }

    /// Sets a small line at the end of the page (tool version, seed, …).
    pub fn footer(&mut self, text: impl Into<String>) -> &mut Self {
        self.footer = Some(text.into());
        self
    }

    /// Starts a new section and returns it for adding content.
    pub fn section(&mut self, heading: impl Into<String>) -> &mut Section {
        self.sections.push(Section { heading: heading.into(), blocks: Vec::new() });
        let last = self.sections.len() - 1;
        &mut self.sections[last]
    }

    /// The complete HTML5 document.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(16 * 1024);
        let title = escape_html(&self.title);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <meta name=\"generator\" content=\"cloudcache-report {}\">\n\
             <title>{title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<main>\n<header>\n<h1>{title}</h1>\n",
            env!("CARGO_PKG_VERSION")
        );
        if let Some(subtitle) = &self.subtitle {
            let _ = writeln!(out, "<p class=\"subtitle\">{}</p>", escape_html(subtitle));
        }
        out.push_str("</header>\n");
        if self.sections.len() >= CONTENTS_FROM_SECTIONS {
            out.push_str("<nav class=\"contents\"><h2>Contents</h2><ol>\n");
            for (i, section) in self.sections.iter().enumerate() {
                let _ =
                    writeln!(out, "<li><a href=\"#s{}\">{}</a></li>", i + 1, escape_html(&section.heading));
            }
            out.push_str("</ol></nav>\n");
        }
        for (i, section) in self.sections.iter().enumerate() {
            // Ids are numbered rather than derived from headings, so no heading can break them.
            section.render(&format!("s{}", i + 1), &mut out);
        }
        if let Some(footer) = &self.footer {
            let _ = writeln!(out, "<footer>{}</footer>", escape_html(footer));
        }
        out.push_str("</main>\n</body>\n</html>\n");
        out
    }

    /// Renders the report and writes it to `path`.
    pub fn write_to(&self, path: impl AsRef<Path>) -> io::Result<()> {
        std::fs::write(path, self.render())
    }
}

const STYLE: &str = r#":root {
  --text: #1f2328; --muted: #59636e; --line: #d8dee4; --soft: #f6f8fa; --accent: #0072b2;
  --note: #fff8e5; --note-line: #e6a700;
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body {
  margin: 0; color: var(--text); background: #fff;
  font: 15px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
}
main { max-width: 1120px; margin: 0 auto; padding: 28px 24px 48px; }
header { border-bottom: 3px solid var(--accent); padding-bottom: 10px; margin-bottom: 8px; }
h1 { font-size: 1.75rem; line-height: 1.25; margin: 0; overflow-wrap: anywhere; }
.subtitle { margin: 6px 0 0; color: var(--muted); }
h2 { font-size: 1.3rem; margin: 36px 0 12px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.05rem; margin: 24px 0 8px; }
p { margin: 10px 0; max-width: 75ch; overflow-wrap: anywhere; }
.note { max-width: none; background: var(--note); border-left: 4px solid var(--note-line); padding: 8px 12px; border-radius: 4px; }
pre { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; overflow-x: auto; font-size: 13px; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; }
.table-wrap { overflow-x: auto; margin: 12px 0 16px; }
table { border-collapse: collapse; font-size: 14px; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding: 0 0 6px; }
th, td { padding: 5px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
thead th { background: var(--soft); border-bottom: 2px solid var(--line); font-weight: 600; white-space: nowrap; }
tbody tr:nth-child(even) { background: #fbfcfd; }
td.num, th.num { text-align: right; white-space: nowrap; }
table.kv th { font-weight: 600; color: var(--muted); white-space: nowrap; padding-right: 24px; }
table.kv td { overflow-wrap: anywhere; }
figure.chart { margin: 16px 0 24px; padding: 8px; border: 1px solid var(--line); border-radius: 8px; background: #fff; }
figure.chart svg { display: block; max-width: 100%; height: auto; margin: 0 auto; }
nav.contents { margin: 18px 0 0; padding: 8px 16px; background: var(--soft); border-radius: 8px; }
nav.contents h2 { font-size: 1rem; margin: 4px 0; padding: 0; border: 0; }
nav.contents ol { margin: 4px 0 6px; padding-left: 22px; }
a { color: var(--accent); }
footer { margin-top: 40px; padding-top: 10px; border-top: 1px solid var(--line); color: var(--muted); font-size: 13px; }
@media print {
  body { font-size: 11pt; }
  main { max-width: none; padding: 0; }
  nav.contents { display: none; }
  h2, h3 { break-after: avoid; }
  figure.chart, table, pre, .note { break-inside: avoid; }
  figure.chart { border: 0; padding: 0; }
  a { color: inherit; text-decoration: none; }
}
"#;
