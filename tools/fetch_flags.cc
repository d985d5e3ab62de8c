#include "tools/fetch_flags.h"

#include "base/units.h"
#include "fetch/sha256sums.h"
#include "input/remote_image.h"

namespace flashpipe::tools {

void AddFetchFlags(CLI::App& app, FetchFlags& f, bool with_digest) {
  const char* g = "Images at http(s) URLs";
  app.add_option("--cacert", f.cacert, "CA certificates (PEM) to check https servers with, instead of the system's")
      ->group(g);
  app.add_option("--connect-timeout", f.connect_timeout, "seconds to connect to a server (default 15)")->group(g);
  app.add_option("--speed-limit", f.speed_limit,
                 "with --speed-time: a transfer slower than this many bytes/s (SI: 1K = 1000) is dropped and resumed (default 1K)")
      ->group(g);
  app.add_option("--speed-time", f.speed_time, "seconds below --speed-limit before that (default 20)")->group(g);
  app.add_option("--fetch-retries", f.retries, "failed attempts in a row, without a new byte, before giving up (default 5)")
      ->group(g);
  app.add_option("--connections", f.connections, "connections at once per image (default 4)")->group(g);
  app.add_option("--cache", f.cache_dir, "the download cache (default $XDG_CACHE_HOME/flashpipe)")->group(g);
  app.add_flag("--no-cache", f.no_cache, "keep nothing: fetch through a temporary file")->group(g);
  app.add_option("--cache-max", f.cache_max, "the cache's size: least recently used entries go past it (default 20G)")
      ->group(g);
  const char* s = "Where the image comes from";
  if (with_digest) {
    app.add_option("--sha256", f.sha256, "the image file's SHA-256: checked as it is read, a mismatch fails the run")
        ->group(s);
    app.add_option("--sha256sums", f.sha256sums, "a SHA256SUMS file or URL that lists the image's file name")->group(s);
  }
  app.add_option("--keyring", f.keyring, "public keys (exported or a keybox): the bmap must be signed by one of them")
      ->group(s);
  app.add_option("--fingerprint", f.fingerprint, "the bmap must be signed by this key")->group(s);
  app.add_flag("--no-sig-verify", f.no_sig_verify, "do not check a bmap's signature")->group(s);
}

Status ApplyFetchFlags(const FetchFlags& f, const std::string& image, input::SourceOptions* o, const CancelFlag* cancel) {
  fetch::FetchOptions& x = o->fetch;
  x.http.cacert = f.cacert;
  if (f.connect_timeout <= 0 || f.speed_time <= 0) return InvalidArgument("--connect-timeout and --speed-time: seconds > 0");
  x.http.connect_timeout = f.connect_timeout;
  x.http.speed_time = f.speed_time;
  FP_ASSIGN_OR_RETURN(x.http.speed_limit, ParseRate(f.speed_limit));  // rates are SI (base/units.h)
  x.http.retries = f.retries;
  if (f.connections < 1 || f.connections > 32) return InvalidArgument("--connections: 1 to 32");
  x.http.connections = f.connections;
  x.cache.dir = f.cache_dir;
  x.cache.enabled = !f.no_cache;
  if (f.no_cache && !f.cache_dir.empty()) return InvalidArgument("--cache and --no-cache exclude each other");
  FP_ASSIGN_OR_RETURN(x.cache.max_bytes, ParseSize(f.cache_max));
  x.cancel = cancel;
  o->signature = {.keyring = f.keyring, .fingerprint = f.fingerprint, .verify = !f.no_sig_verify};
  if (f.no_sig_verify && o->signature.required()) {
    return InvalidArgument("--no-sig-verify excludes --keyring and --fingerprint");
  }
  if (!f.sha256.empty()) {
    if (image.empty()) return InvalidArgument("--sha256 names one image's digest: use --sha256sums with several images");
    FP_ASSIGN_OR_RETURN(x.sha256, fetch::NormalizeSha256(f.sha256));
  }
  if (!f.sha256sums.empty() && !image.empty()) FP_RETURN_IF_ERROR(input::ApplySha256Sums(f.sha256sums, image, o));
  return Status::Ok();
}

}  // namespace flashpipe::tools
