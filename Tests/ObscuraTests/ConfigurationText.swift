import ObscuraFormats
@testable import ObscuraService

extension ServiceConfiguration {
    /// The service's configuration from TOML text, as if read from
    /// `obscura.toml` (errors name that file).
    static func parsing(_ text: String) throws(ConfigurationError) -> ServiceConfiguration {
        try ServiceConfiguration(reading: TOMLReader(try TOMLDocument(file: "obscura.toml", text: text)), file: "obscura.toml")
    }
}
