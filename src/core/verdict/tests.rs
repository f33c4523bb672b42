//! Hand-assembled programs for the exploration.
