@_exported import ObscuraAccess
