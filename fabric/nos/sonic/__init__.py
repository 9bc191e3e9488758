"""SONiC: config_db.json (render), its parser for `lint --configs` (configs), checkpoint/apply-patch push (driver)."""
