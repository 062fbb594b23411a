"""The bundled lexicons (one YAML file per language), shipped as package data so that an
installed engine finds them: `importlib.resources.files("phrase_lexicons")`. See README.md."""
