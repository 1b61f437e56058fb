"""The ``simplemem`` command line (Typer): a client of simplemem/processors/ and simplemem/streams/, imported by neither."""
