/// The configuration, its board profiles and their vocabulary, for every
/// user of the service.
@_exported import ObscuraSettings
