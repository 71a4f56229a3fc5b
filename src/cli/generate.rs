//! Man page and shell completions generated from the option table (being written).
