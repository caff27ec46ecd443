/*
 * CRC-32 as ZIP uses it (ISO-HDLC: reflected polynomial 0xEDB88320, init and xorout ~0), by
 * folding with carry-less multiplication. Every byte a packer stores goes through this, and the
 * table method (zlib's, ~4-7 GB/s here) costs as much CPU as the fetch itself; folding runs at
 * tens of GB/s. Method: "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ"
 * (Gopal et al., Intel, 2009); the constants are computed at load time, not transcribed.
 *
 * Representation (reflected, as the bytes come): a 128-bit lane loaded little-endian holds the
 * polynomial whose x^(127-k) coefficient is bit k, so its low quadword comes first in the
 * message and has the higher degree. A carry-less product of two reflected 64-bit values is the
 * reflected product times x (127 bits in a 128-bit lane). Folding a lane X = Q0·x^64 + Q1 forward
 * by d bytes onto the lane there: X·x^(8d) ≡ Q0·(x^(8d+63) mod P)·x + Q1·(x^(8d-1) mod P)·x.
 * After the last fold, one 16-byte lane is congruent to everything folded so far; a bytewise CRC
 * of those 16 bytes from state 0 is the state after them, and the tail goes bytewise as well.
 */
#include <node_api.h>
#include <stddef.h>
#include <stdint.h>

#define POLY 0xedb88320u

/* In order of speed; a CPU that has one has every one before it. */
enum method { METHOD_TABLE = 0, METHOD_PCLMUL = 1, METHOD_VPCLMUL_AVX2 = 2, METHOD_VPCLMUL_AVX512 = 3 };

static uint32_t table[256];
static enum method best = METHOD_TABLE;

static void init_table(void) {
  for (uint32_t n = 0; n < 256; n++) {
    uint32_t c = n;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
    table[n] = c;
  }
}

/* The inner state (not inverted) after `n` more bytes. */
static uint32_t crc_bytes(uint32_t c, const uint8_t *p, size_t n) {
  while (n--) c = table[(c ^ *p++) & 0xff] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_FOLDING 1

/* x^n mod P, reflected: bit i is the coefficient of x^(31-i). */
static uint32_t xpow_mod(uint32_t n) {
  uint32_t v = 0x80000000u;
  while (n--) v = (v & 1) ? (v >> 1) ^ POLY : v >> 1;
  return v;
}

/* Fold constants for a distance of d bytes: {low quadword's, high quadword's}, each a 64-bit
 * reflected value (the 32-bit remainder sits in its upper half). */
struct fold { uint64_t lo, hi; };
static struct fold fold_by(uint32_t d) {
  struct fold f = { (uint64_t)xpow_mod(8 * d + 63) << 32, (uint64_t)xpow_mod(8 * d - 1) << 32 };
  return f;
}
static struct fold FOLD16, FOLD32, FOLD64, FOLD128, FOLD256;

#define TARGET_PCLMUL __attribute__((target("pclmul,sse4.1")))
#define TARGET_VPCLMUL_AVX2 __attribute__((target("avx2,vpclmulqdq,pclmul,sse4.1")))
#define TARGET_VPCLMUL_AVX512 __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.1")))

TARGET_PCLMUL static inline __m128i fold_constant128(struct fold f) {
  return _mm_set_epi64x((long long)f.hi, (long long)f.lo);
}

/* x folded forward onto y: x.lo·k.lo ^ x.hi·k.hi ^ y. */
TARGET_PCLMUL static inline __m128i fold128(__m128i x, __m128i k, __m128i y) {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), y);
}

/* The 16 bytes left after folding, then the tail below 16 bytes. */
TARGET_PCLMUL static uint32_t finish(__m128i x, const uint8_t *p, size_t n) {
  const __m128i k16 = fold_constant128(FOLD16);
  for (; n >= 16; p += 16, n -= 16) x = fold128(x, k16, _mm_loadu_si128((const __m128i *)p));
  uint8_t last[16];
  _mm_storeu_si128((__m128i *)last, x);
  return crc_bytes(crc_bytes(0, last, 16), p, n);
}

/* n >= 64: four 16-byte lanes, 64 bytes a round. */
TARGET_PCLMUL static uint32_t crc_pclmul(uint32_t c, const uint8_t *p, size_t n) {
  const __m128i k64 = fold_constant128(FOLD64);
  const __m128i k16 = fold_constant128(FOLD16);
  __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)c));
  __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
  __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
  __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
  for (p += 64, n -= 64; n >= 64; p += 64, n -= 64) {
    x0 = fold128(x0, k64, _mm_loadu_si128((const __m128i *)p));
    x1 = fold128(x1, k64, _mm_loadu_si128((const __m128i *)(p + 16)));
    x2 = fold128(x2, k64, _mm_loadu_si128((const __m128i *)(p + 32)));
    x3 = fold128(x3, k64, _mm_loadu_si128((const __m128i *)(p + 48)));
  }
  __m128i x = fold128(fold128(fold128(x0, k16, x1), k16, x2), k16, x3);
  return finish(x, p, n);
}

/* x folded forward onto y, two lanes at once. */
TARGET_VPCLMUL_AVX2 static inline __m256i fold256(__m256i x, __m256i k, __m256i y) {
  return _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(x, k, 0x00), _mm256_clmulepi64_epi128(x, k, 0x11)), y);
}

/* n >= 128: four 32-byte registers of two lanes each, 128 bytes a round (CPUs with VPCLMULQDQ
 * but no AVX-512, such as AMD Zen 3 and Intel's hybrid cores). */
TARGET_VPCLMUL_AVX2 static uint32_t crc_vpclmul_avx2(uint32_t c, const uint8_t *p, size_t n) {
  const __m256i k128 = _mm256_broadcastsi128_si256(fold_constant128(FOLD128));
  const __m256i k32 = _mm256_broadcastsi128_si256(fold_constant128(FOLD32));
  const __m128i k16 = fold_constant128(FOLD16);
  __m256i x0 = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)p), _mm256_zextsi128_si256(_mm_cvtsi32_si128((int)c)));
  __m256i x1 = _mm256_loadu_si256((const __m256i *)(p + 32));
  __m256i x2 = _mm256_loadu_si256((const __m256i *)(p + 64));
  __m256i x3 = _mm256_loadu_si256((const __m256i *)(p + 96));
  for (p += 128, n -= 128; n >= 128; p += 128, n -= 128) {
    x0 = fold256(x0, k128, _mm256_loadu_si256((const __m256i *)p));
    x1 = fold256(x1, k128, _mm256_loadu_si256((const __m256i *)(p + 32)));
    x2 = fold256(x2, k128, _mm256_loadu_si256((const __m256i *)(p + 64)));
    x3 = fold256(x3, k128, _mm256_loadu_si256((const __m256i *)(p + 96)));
  }
  __m256i x = fold256(fold256(fold256(x0, k32, x1), k32, x2), k32, x3);
  for (; n >= 32; p += 32, n -= 32) x = fold256(x, k32, _mm256_loadu_si256((const __m256i *)p));
  __m128i y = fold128(_mm256_castsi256_si128(x), k16, _mm256_extracti128_si256(x, 1));
  return finish(y, p, n);
}

/* x folded forward onto y, four lanes at once. */
TARGET_VPCLMUL_AVX512 static inline __m512i fold512(__m512i x, __m512i k, __m512i y) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11), y, 0x96);
}

/* n >= 256: four 64-byte registers of four lanes each, 256 bytes a round. */
TARGET_VPCLMUL_AVX512 static uint32_t crc_vpclmul_avx512(uint32_t c, const uint8_t *p, size_t n) {
  const __m512i k256 = _mm512_broadcast_i32x4(fold_constant128(FOLD256));
  const __m512i k64 = _mm512_broadcast_i32x4(fold_constant128(FOLD64));
  const __m128i k16 = fold_constant128(FOLD16);
  __m512i x0 = _mm512_xor_si512(_mm512_loadu_si512(p), _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)c)));
  __m512i x1 = _mm512_loadu_si512(p + 64);
  __m512i x2 = _mm512_loadu_si512(p + 128);
  __m512i x3 = _mm512_loadu_si512(p + 192);
  for (p += 256, n -= 256; n >= 256; p += 256, n -= 256) {
    x0 = fold512(x0, k256, _mm512_loadu_si512(p));
    x1 = fold512(x1, k256, _mm512_loadu_si512(p + 64));
    x2 = fold512(x2, k256, _mm512_loadu_si512(p + 128));
    x3 = fold512(x3, k256, _mm512_loadu_si512(p + 192));
  }
  __m512i x = fold512(fold512(fold512(x0, k64, x1), k64, x2), k64, x3);
  for (; n >= 64; p += 64, n -= 64) x = fold512(x, k64, _mm512_loadu_si512(p));
  __m128i y = _mm512_extracti32x4_epi32(x, 0);
  y = fold128(y, k16, _mm512_extracti32x4_epi32(x, 1));
  y = fold128(y, k16, _mm512_extracti32x4_epi32(x, 2));
  y = fold128(y, k16, _mm512_extracti32x4_epi32(x, 3));
  return finish(y, p, n);
}

static void init_folding(void) {
  FOLD16 = fold_by(16);
  FOLD32 = fold_by(32);
  FOLD64 = fold_by(64);
  FOLD128 = fold_by(128);
  FOLD256 = fold_by(256);
  __builtin_cpu_init();
  int pclmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  int vpclmul = pclmul && __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx2");
  if (vpclmul && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) best = METHOD_VPCLMUL_AVX512;
  else if (vpclmul) best = METHOD_VPCLMUL_AVX2;
  else if (pclmul) best = METHOD_PCLMUL;
}
#endif

/* zlib's crc32(crc, p, n): the state is kept inverted between calls. */
static uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n, enum method m) {
  uint32_t c = ~crc;
#ifdef HAVE_FOLDING
  if (m == METHOD_VPCLMUL_AVX512 && n >= 256) return ~crc_vpclmul_avx512(c, p, n);
  if (m >= METHOD_VPCLMUL_AVX2 && n >= 128) return ~crc_vpclmul_avx2(c, p, n);
  if (m >= METHOD_PCLMUL && n >= 64) return ~crc_pclmul(c, p, n);
#else
  (void)m;
#endif
  return ~crc_bytes(c, p, n);
}

/* JS: (data: Uint8Array, previous?: number, method?: number) => number */
static napi_value js_crc32(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
  napi_typedarray_type type;
  size_t length;
  void *data;
  if (argc < 1 || napi_get_typedarray_info(env, argv[0], &type, &length, &data, NULL, NULL) != napi_ok || type != napi_uint8_array) {
    napi_throw_type_error(env, NULL, "crc32: data must be a Uint8Array");
    return NULL;
  }
  uint32_t previous = 0;
  if (argc > 1 && napi_get_value_uint32(env, argv[1], &previous) != napi_ok) {
    napi_throw_type_error(env, NULL, "crc32: previous must be a number");
    return NULL;
  }
  uint32_t method = best;
  if (argc > 2 && napi_get_value_uint32(env, argv[2], &method) != napi_ok) {
    napi_throw_type_error(env, NULL, "crc32: method must be a number");
    return NULL;
  }
  if (method > (uint32_t)best) method = best;
  napi_value result;
  napi_create_uint32(env, crc32_update(previous, (const uint8_t *)data, length, (enum method)method), &result);
  return result;
}

NAPI_MODULE_INIT() {
  init_table();
#ifdef HAVE_FOLDING
  init_folding();
#endif
  napi_value fn, method;
  napi_create_function(env, "crc32", NAPI_AUTO_LENGTH, js_crc32, NULL, &fn);
  napi_set_named_property(env, exports, "crc32", fn);
  napi_create_uint32(env, best, &method);
  napi_set_named_property(env, exports, "method", method);
  return exports;
}
