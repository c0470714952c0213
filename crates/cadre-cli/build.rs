//! The same kernel probe as cadre-core's (see there): which sandbox tests
//! this kernel can run.
include!("../cadre-core/build.rs");
