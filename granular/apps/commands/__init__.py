"""The ``granular`` command's subcommands, one module each, named as the command: its options
(``add``) and what it does (``cmd_<name>``). :mod:`granular.apps.cli` lists them; ``common`` holds
what they share."""
