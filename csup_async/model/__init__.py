"""The data model: errors, super types, values, the budget and progress a read reports, and
how each type is held in numpy.  Plain definitions with no I/O; every other folder builds on it."""
