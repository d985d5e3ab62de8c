// OpenPGP signatures of bmaps, as bmaptool checks them, through GPGME (the
// gpg engine does the cryptography; flashpipe parses no OpenPGP packet).
//
// A bmap is signed either inline (the whole file is a clear-signed message,
// "-----BEGIN PGP SIGNED MESSAGE-----", whose text is the bmap) or by a
// detached signature beside it (BMAP.asc, armored, or BMAP.sig, binary).
// A signature is good when gpg reports it valid (status 0: made by a key it
// has, unchanged data, neither expired nor revoked) and, with a
// fingerprint, made by that key (its primary key or the signing subkey).
// Keys: the user's own keyring (GNUPGHOME, ~/.gnupg), or with `keyring` only
// the keys of that file (exported keys, armored or binary, or a keybox),
// imported into a temporary home that is removed afterwards.
// Thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace flashpipe::fetch {

struct SignaturePolicy {
  std::string keyring;      // --keyring FILE
  std::string fingerprint;  // --fingerprint FPR
  bool verify = true;       // false: --no-sig-verify
  // With a key named, a bmap must carry a good signature by it.
  bool required() const { return !keyring.empty() || !fingerprint.empty(); }
};

inline constexpr std::string_view kClearSignedHeader = "-----BEGIN PGP SIGNED MESSAGE-----";
bool IsClearSigned(std::string_view text);

struct Verified {
  std::string text;         // the signed text (the bmap)
  std::string fingerprint;  // of the key that made the good signature
};

// `detached`: the signature over `data`; nullopt: `data` is clear-signed.
// `what` names the bmap in messages. Errors: kCorrupt for a bad or
// missing signature or one by another key, with gpg's reason.
Result<Verified> VerifySignature(std::string_view data, std::optional<std::string_view> detached,
                                 const SignaturePolicy& policy, const std::string& what);

}  // namespace flashpipe::fetch
