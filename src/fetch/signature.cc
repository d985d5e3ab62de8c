#include "fetch/signature.h"

#include <fcntl.h>
#include <gpgme.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <vector>

#include "base/fd_io.h"
#include "base/unique_fd.h"

namespace flashpipe::fetch {
namespace {

struct CtxDeleter {
  void operator()(gpgme_ctx_t c) const { gpgme_release(c); }
};
struct DataDeleter {
  void operator()(gpgme_data_t d) const { gpgme_data_release(d); }
};
using Ctx = std::unique_ptr<std::remove_pointer_t<gpgme_ctx_t>, CtxDeleter>;
using Data = std::unique_ptr<std::remove_pointer_t<gpgme_data_t>, DataDeleter>;

Status GpgError(const std::string& what, gpgme_error_t err) {
  return Corrupt(fmt::format("{}: {}", what, gpgme_strerror(err)));
}

Result<Data> FromMem(std::string_view bytes) {
  gpgme_data_t d = nullptr;
  gpgme_error_t err = gpgme_data_new_from_mem(&d, bytes.data(), bytes.size(), 1);
  if (err != 0) return GpgError("gpgme data", err);
  return Data(d);
}

std::string Hex(std::string_view fpr) {
  std::string out;
  for (char c : fpr)
    if (std::isxdigit(static_cast<unsigned char>(c))) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// A home for gpg holding only the keys of `keyring`; removed with it.
class TempHome {
 public:
  ~TempHome() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  Status Make() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp") + "/flashpipe-gpg-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) return ErrnoError("cannot make a temporary gpg home");
    path_ = tmpl;
    return Status::Ok();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

Result<std::string> ReadKeyring(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(fmt::format("cannot open keyring {}", path));
  std::string data;
  uint8_t buf[65536];
  for (;;) {
    FP_ASSIGN_OR_RETURN(size_t n, ReadUpTo(fd.get(), buf, path));
    data.append(reinterpret_cast<char*>(buf), n);
    if (n < sizeof(buf)) break;
    if (data.size() > (64 << 20)) return InvalidArgument(fmt::format("keyring {}: larger than 64 MiB", path));
  }
  return data;
}

Status LoadKeyring(gpgme_ctx_t ctx, const TempHome& home, const std::string& keyring) {
  FP_ASSIGN_OR_RETURN(std::string keys, ReadKeyring(keyring));
  if (keys.size() >= 12 && keys.compare(8, 4, "KBXf") == 0) {  // a keybox: gpg's own file, used as it is
    std::string dest = home.path() + "/pubring.kbx";
    UniqueFd out(::open(dest.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!out.valid()) return ErrnoError("cannot create " + dest);
    return WriteAll(out.get(), {reinterpret_cast<const uint8_t*>(keys.data()), keys.size()}, dest);
  }
  FP_ASSIGN_OR_RETURN(Data data, FromMem(keys));
  if (gpgme_error_t err = gpgme_op_import(ctx, data.get()); err != 0) return GpgError("keyring " + keyring, err);
  gpgme_import_result_t r = gpgme_op_import_result(ctx);
  if (r == nullptr || (r->imported == 0 && r->unchanged == 0)) {
    return InvalidArgument(fmt::format("keyring {}: no OpenPGP public key in it", keyring));
  }
  return Status::Ok();
}

// The primary fingerprint of the key that made `sig`.
std::string PrimaryFingerprint(gpgme_ctx_t ctx, gpgme_signature_t sig) {
  gpgme_key_t key = nullptr;
  if (sig->fpr == nullptr || gpgme_get_key(ctx, sig->fpr, &key, 0) != 0 || key == nullptr) return "";
  std::string fpr = key->subkeys != nullptr && key->subkeys->fpr != nullptr ? key->subkeys->fpr : "";
  gpgme_key_unref(key);
  return Hex(fpr);
}

Result<Verified> Judge(gpgme_ctx_t ctx, const SignaturePolicy& policy, const std::string& what, std::string text) {
  gpgme_verify_result_t r = gpgme_op_verify_result(ctx);
  if (r == nullptr || r->signatures == nullptr) return Corrupt(fmt::format("{}: no signature in it", what));
  std::string reason;
  for (gpgme_signature_t s = r->signatures; s != nullptr; s = s->next) {
    std::string fpr = Hex(s->fpr != nullptr ? s->fpr : "");
    if (gpgme_err_code(s->status) != GPG_ERR_NO_ERROR) {
      reason = fmt::format("signature by {}: {}", fpr.empty() ? "an unknown key" : fpr, gpgme_strerror(s->status));
      continue;
    }
    std::string primary = PrimaryFingerprint(ctx, s);
    std::string want = Hex(policy.fingerprint);
    if (!want.empty() && want != fpr && want != primary) {
      reason = fmt::format("signed by {}, not by {}", primary.empty() ? fpr : primary, want);
      continue;
    }
    return Verified{std::move(text), primary.empty() ? fpr : primary};
  }
  return Corrupt(fmt::format("{}: {}", what, reason));
}

}  // namespace

bool IsClearSigned(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  return text.substr(i).starts_with(kClearSignedHeader);
}

Result<Verified> VerifySignature(std::string_view data, std::optional<std::string_view> detached,
                                 const SignaturePolicy& policy, const std::string& what) {
  gpgme_check_version(nullptr);
  gpgme_ctx_t raw = nullptr;
  if (gpgme_error_t err = gpgme_new(&raw); err != 0) return GpgError("gpgme", err);
  Ctx ctx(raw);
  gpgme_set_protocol(ctx.get(), GPGME_PROTOCOL_OpenPGP);
  TempHome home;
  if (!policy.keyring.empty()) {
    FP_RETURN_IF_ERROR(home.Make());
    gpgme_error_t err = gpgme_ctx_set_engine_info(ctx.get(), GPGME_PROTOCOL_OpenPGP, nullptr, home.path().c_str());
    if (err != 0) return GpgError("gpgme home", err);
    FP_RETURN_IF_ERROR(LoadKeyring(ctx.get(), home, policy.keyring));
  }
  FP_ASSIGN_OR_RETURN(Data signed_data, FromMem(data));
  if (detached) {
    FP_ASSIGN_OR_RETURN(Data sig, FromMem(*detached));
    if (gpgme_error_t err = gpgme_op_verify(ctx.get(), sig.get(), signed_data.get(), nullptr); err != 0) {
      return GpgError(what + ": signature", err);
    }
    return Judge(ctx.get(), policy, what, std::string(data));
  }
  gpgme_data_t plain_raw = nullptr;
  if (gpgme_error_t err = gpgme_data_new(&plain_raw); err != 0) return GpgError("gpgme data", err);
  Data plain(plain_raw);
  if (gpgme_error_t err = gpgme_op_verify(ctx.get(), signed_data.get(), nullptr, plain.get()); err != 0) {
    return GpgError(what + ": clear-signed bmap", err);
  }
  std::string text;
  gpgme_data_seek(plain.get(), 0, SEEK_SET);
  char buf[65536];
  for (ssize_t n; (n = gpgme_data_read(plain.get(), buf, sizeof(buf))) > 0;) text.append(buf, static_cast<size_t>(n));
  if (!policy.verify) return Verified{std::move(text), ""};  // --no-sig-verify: only the text is taken out
  return Judge(ctx.get(), policy, what, std::move(text));
}

}  // namespace flashpipe::fetch
