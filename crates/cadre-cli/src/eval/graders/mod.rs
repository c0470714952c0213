//! Graders: what a case asks for (`spec`, read from `case.yaml`) and how
//! each is checked over a run's evidence (`checks`).

mod checks;
mod spec;

pub use checks::GradeResult;
pub use spec::Grader;
