use crate::d::D;
