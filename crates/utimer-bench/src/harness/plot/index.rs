//! `index.html`: the page that shows every chart of a run, in run order,
//! with a list of links on top.

use std::fmt::Write as _;

use super::figure::Figure;

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page that shows every chart, with a list of links on top.
pub(super) fn index_html(charts: &[Figure]) -> String {
    let mut h = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>utimer bench charts</title>\n<style>\n\
         body { font-family: sans-serif; max-width: 960px; margin: 2em auto; }\n\
         figure { margin: 2em 0; } img { max-width: 100%; border: 1px solid #ddd; }\n\
         </style>\n</head>\n<body>\n<h1>utimer bench charts</h1>\n",
    );
    if charts.is_empty() {
        h.push_str("<p>No case of this run had values to chart.</p>\n");
    } else {
        let _ = writeln!(h, "<p>{} charts from one run of <code>utimer bench</code>; bars show the median of the repetitions.</p>\n<ul>", charts.len());
        for c in charts {
            let _ = writeln!(
                h,
                "<li><a href=\"#{}\">{}</a></li>",
                html_escape(&c.file),
                html_escape(&c.title)
            );
        }
        h.push_str("</ul>\n");
        for c in charts {
            let (file, title) = (html_escape(&c.file), html_escape(&c.title));
            let _ = writeln!(
                h,
                "<figure id=\"{file}\"><img src=\"{file}\" alt=\"{title}\" /><figcaption>{title}</figcaption></figure>"
            );
        }
    }
    h.push_str("</body>\n</html>\n");
    h
}
