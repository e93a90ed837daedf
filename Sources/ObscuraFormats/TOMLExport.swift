@_exported import ObscuraTOML
