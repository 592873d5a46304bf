"""The operation catalogue: each operation declared once, every face an adapter over it."""
