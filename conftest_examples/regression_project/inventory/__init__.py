"""A small warehouse library: the code under test of the regression example."""
