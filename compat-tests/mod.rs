//! Differential tests: the same command lines run by aria2c and by ringdl (being written).
