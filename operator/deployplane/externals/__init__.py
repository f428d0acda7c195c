"""externals."""
