//! A strict-enough markup checker for the HTML and SVG this crate writes: every element that
//! is opened is closed in order, tags contain no stray `<`, attribute values are quoted, and
//! every `&` in text starts a character reference. It is not a full HTML parser; it holds the
//! output to the XML-like subset the crate promises to produce.

#![allow(dead_code)]

const VOID: [&str; 6] = ["meta", "br", "hr", "img", "link", "input"];

/// Checks `doc`; the error names the first problem and where it is.
pub fn check_markup(doc: &str) -> Result<(), String> {
    let mut stack: Vec<String> = Vec::new();
    let mut pos = 0;
    while pos < doc.len() {
        let rest = &doc[pos..];
        let Some(lt) = rest.find('<') else {
            check_text(rest, pos)?;
            break;
        };
        check_text(&rest[..lt], pos)?;
        let tag_start = pos + lt;
        let after = &doc[tag_start + 1..];
        if let Some(comment) = after.strip_prefix("!--") {
            let end = comment.find("-->").ok_or(format!("unclosed comment at {tag_start}"))?;
            pos = tag_start + 4 + end + 3;
            continue;
        }
        let end = tag_end(after).ok_or(format!("unclosed tag at {tag_start}: {}", snippet(after)))?;
        let tag = &after[..end];
        pos = tag_start + 1 + end + 1;
        if tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            let name = name.trim();
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("</{name}> at {tag_start} closes {other:?}")),
            }
            continue;
        }
        let name: String = tag.chars().take_while(|c| !c.is_whitespace() && *c != '/').collect();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(format!("bad tag name at {tag_start}: {}", snippet(tag)));
        }
        check_attributes(&tag[name.len()..], tag_start)?;
        if tag.ends_with('/') || VOID.contains(&name.as_str()) {
            continue;
        }
        if name == "style" || name == "script" {
            let close = format!("</{name}>");
            let body_end = doc[pos..].find(&close).ok_or(format!("unclosed <{name}>"))?;
            pos += body_end + close.len();
            continue;
        }
        stack.push(name);
    }
    if stack.is_empty() {
        Ok(())
    } else {
        Err(format!("unclosed elements: {stack:?}"))
    }
}

/// Index of the `>` ending a tag, skipping quoted attribute values.
fn tag_end(after: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    for (i, c) in after.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '>') => return Some(i),
            (None, '<') => return None,
            _ => {}
        }
    }
    None
}

fn check_attributes(attrs: &str, at: usize) -> Result<(), String> {
    let mut rest = attrs.trim().trim_end_matches('/').trim();
    while !rest.is_empty() {
        let name_len = rest.find(|c: char| c == '=' || c.is_whitespace()).unwrap_or(rest.len());
        let name = &rest[..name_len];
        if name.is_empty()
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ':' || c == '_')
        {
            return Err(format!("bad attribute name at {at}: {}", snippet(rest)));
        }
        rest = rest[name_len..].trim_start();
        if let Some(value) = rest.strip_prefix('=') {
            let value = value.trim_start();
            let quote = value.chars().next().filter(|c| *c == '"' || *c == '\'');
            let quote = quote.ok_or(format!("unquoted attribute {name} at {at}"))?;
            let close = value[1..].find(quote).ok_or(format!("unterminated attribute {name} at {at}"))?;
            let inner = &value[1..1 + close];
            if inner.contains('<') {
                return Err(format!("'<' in attribute {name} at {at}"));
            }
            check_text(inner, at)?;
            rest = value[close + 2..].trim_start();
        }
    }
    Ok(())
}

fn check_text(text: &str, at: usize) -> Result<(), String> {
    if text.contains('>') {
        return Err(format!("unescaped '>' in text at {at}: {}", snippet(text)));
    }
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        let entity = &rest[amp + 1..];
        let end = entity.find(';').ok_or(format!("bare '&' at {at}: {}", snippet(text)))?;
        let name = &entity[..end];
        let ok = match name.strip_prefix('#') {
            Some(num) => !num.is_empty() && num.chars().all(|c| c.is_ascii_digit()),
            None => !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric()),
        };
        if !ok {
            return Err(format!("bad character reference &{name}; at {at}"));
        }
        rest = &entity[end + 1..];
    }
    Ok(())
}

fn snippet(s: &str) -> String {
    s.chars().take(60).collect()
}

#[test]
fn checker_catches_problems() {
    assert!(check_markup("<p>a &amp; b</p>").is_ok());
    assert!(check_markup("<svg><text>x</text></svg>").is_ok());
    assert!(check_markup("<svg><text>x</svg>").is_err());
    assert!(check_markup("<svg>").is_err());
    assert!(check_markup("<p>a & b</p>").is_err());
    assert!(check_markup("<p>a > b</p>").is_err());
    assert!(check_markup("<p title=x>a</p>").is_err());
    assert!(
        check_markup("<p><script>alert(1)</script></p>").is_ok(),
        "script bodies are skipped, and found separately"
    );
}
