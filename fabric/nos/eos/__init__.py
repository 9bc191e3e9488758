"""Arista EOS: running-config CLI (render), its parser, configuration sessions with commit timer (driver)."""
