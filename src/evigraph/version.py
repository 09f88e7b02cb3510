"""The release number, in a module of its own so a server or the command line can name it without
importing the package's façade (`evigraph/__init__`), the layer above them all."""

__version__ = "0.1.0"
