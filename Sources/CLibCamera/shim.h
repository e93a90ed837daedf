/* libcamera is C++: CCamera includes it; this module only carries its
 * pkg-config flags (and link line) to the targets that depend on it. */
