"""The ``simplemem`` command line (Typer): a client of processors/ and streams/, imported by neither."""
