//! PLACEHOLDER: HTML report of a simulation, waiting for the report crate.
use crate::report::SimReport;
/// Render.
pub fn render(report: &SimReport) -> String {
    format!("<pre>{}</pre>", report.render_text())
}
