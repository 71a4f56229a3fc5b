//! Generated documentation is current (being written).
