"""Example job apps shipped with tether: ``pipeline`` is the one ``tether demo`` runs, so the
demo works from an installed package as well as from a checkout."""
