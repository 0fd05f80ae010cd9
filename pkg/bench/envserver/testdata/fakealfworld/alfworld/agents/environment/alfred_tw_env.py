class AlfredDemangler:
    name = "demangler"
