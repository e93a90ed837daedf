/* Nettle: SHA-256 (it picks the CPU's SHA instructions at run time: x86
 * SHA-NI, Armv8 crypto extensions; plain C elsewhere), and what the age
 * format is built from: X25519, ChaCha20-Poly1305 (RFC 8439, 96-bit nonce)
 * and HKDF/HMAC-SHA256. Nettle 3.4 or later (Debian 12: 3.8, Debian 13: 3.10). */
#include <nettle/sha2.h>
#include <nettle/hmac.h>
#include <nettle/hkdf.h>
#include <nettle/curve25519.h>
#include <nettle/chacha-poly1305.h>
#include <nettle/memops.h>
#include <nettle/version.h>

#if NETTLE_VERSION_MAJOR < 3 || (NETTLE_VERSION_MAJOR == 3 && NETTLE_VERSION_MINOR < 4)
#error "Nettle 3.4 or later is needed (hkdf.h, 96-bit ChaCha20-Poly1305 nonces)"
#endif

/* HKDF-SHA256 (RFC 5869) with Nettle's hkdf_extract and hkdf_expand, which
 * take the MAC's functions as pointers (macros in Nettle's headers, which
 * Swift cannot name). An empty salt is HashLen zero bytes, as RFC 5869 says. */
static inline void obscura_hkdf_sha256(size_t salt_length, const uint8_t *salt,
                                       size_t ikm_length, const uint8_t *ikm,
                                       size_t info_length, const uint8_t *info,
                                       size_t length, uint8_t *out) {
    static const uint8_t no_salt[SHA256_DIGEST_SIZE];
    struct hmac_sha256_ctx ctx;
    uint8_t prk[SHA256_DIGEST_SIZE];
    if (salt_length == 0) { salt = no_salt; salt_length = sizeof no_salt; }
    hmac_sha256_set_key(&ctx, salt_length, salt);
    hkdf_extract(&ctx, (nettle_hash_update_func *)hmac_sha256_update,
                 (nettle_hash_digest_func *)hmac_sha256_digest, SHA256_DIGEST_SIZE,
                 ikm_length, ikm, prk);
    hmac_sha256_set_key(&ctx, SHA256_DIGEST_SIZE, prk);
    hkdf_expand(&ctx, (nettle_hash_update_func *)hmac_sha256_update,
                (nettle_hash_digest_func *)hmac_sha256_digest, SHA256_DIGEST_SIZE,
                info_length, info, length, out);
}

/* HMAC-SHA256 of one message. */
static inline void obscura_hmac_sha256(size_t key_length, const uint8_t *key,
                                       size_t length, const uint8_t *message, uint8_t *out) {
    struct hmac_sha256_ctx ctx;
    hmac_sha256_set_key(&ctx, key_length, key);
    hmac_sha256_update(&ctx, length, message);
    hmac_sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
}

/* ChaCha20-Poly1305 with no associated data: seals `length` bytes of `in`
 * into `out` followed by the 16-byte tag (in and out may be the same). */
static inline void obscura_chacha_poly1305_seal(const uint8_t *key, const uint8_t *nonce,
                                                size_t length, const uint8_t *in, uint8_t *out) {
    struct chacha_poly1305_ctx ctx;
    chacha_poly1305_set_key(&ctx, key);
    chacha_poly1305_set_nonce(&ctx, nonce);
    chacha_poly1305_encrypt(&ctx, length, out, in);
    chacha_poly1305_digest(&ctx, CHACHA_POLY1305_DIGEST_SIZE, out + length);
}

/* Opens what obscura_chacha_poly1305_seal made (`length` includes the tag):
 * 1 and the plaintext in `out` when the tag is right, 0 (and `out` zeroed)
 * when not. */
static inline int obscura_chacha_poly1305_open(const uint8_t *key, const uint8_t *nonce,
                                               size_t length, const uint8_t *in, uint8_t *out) {
    struct chacha_poly1305_ctx ctx;
    uint8_t tag[CHACHA_POLY1305_DIGEST_SIZE];
    if (length < CHACHA_POLY1305_DIGEST_SIZE) return 0;
    size_t n = length - CHACHA_POLY1305_DIGEST_SIZE;
    chacha_poly1305_set_key(&ctx, key);
    chacha_poly1305_set_nonce(&ctx, nonce);
    chacha_poly1305_decrypt(&ctx, n, out, in);
    chacha_poly1305_digest(&ctx, sizeof tag, tag);
    if (!memeql_sec(tag, in + n, sizeof tag)) {
        for (size_t i = 0; i < n; i++) ((volatile uint8_t *)out)[i] = 0;
        return 0;
    }
    return 1;
}
