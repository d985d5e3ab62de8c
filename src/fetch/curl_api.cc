#include "fetch/curl_api.h"

#include <dlfcn.h>

#include <mutex>

namespace flashpipe::fetch {
namespace {

CurlApi api;
Status loaded = Internal("libcurl not loaded yet");

template <typename F>
bool Bind(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(::dlsym(lib, name));
  return *out != nullptr;
}

Status Load() {
  // libcurl4-openssl-dev's libcurl.so points here; libcurl4 (and the gnutls
  // flavour, libcurl3-gnutls) provide the same ABI under these names.
  void* lib = nullptr;
  std::string why;
  for (const char* name : {"libcurl.so.4", "libcurl-gnutls.so.4"}) {
    lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) break;
    const char* e = ::dlerror();
    if (why.empty() && e != nullptr) why = e;
  }
  if (lib == nullptr) {
    return NotFound(fmt::format("http(s) needs libcurl (Debian: libcurl4): {}", why));
  }
  bool ok = Bind(lib, "curl_global_init", &api.global_init) && Bind(lib, "curl_easy_init", &api.easy_init) &&
            Bind(lib, "curl_easy_cleanup", &api.easy_cleanup) && Bind(lib, "curl_easy_setopt", &api.easy_setopt) &&
            Bind(lib, "curl_easy_perform", &api.easy_perform) && Bind(lib, "curl_easy_getinfo", &api.easy_getinfo) &&
            Bind(lib, "curl_easy_strerror", &api.easy_strerror) && Bind(lib, "curl_slist_append", &api.slist_append) &&
            Bind(lib, "curl_slist_free_all", &api.slist_free_all) && Bind(lib, "curl_multi_init", &api.multi_init) &&
            Bind(lib, "curl_multi_cleanup", &api.multi_cleanup) && Bind(lib, "curl_multi_setopt", &api.multi_setopt) &&
            Bind(lib, "curl_multi_add_handle", &api.multi_add_handle) &&
            Bind(lib, "curl_multi_remove_handle", &api.multi_remove_handle) &&
            Bind(lib, "curl_multi_perform", &api.multi_perform) && Bind(lib, "curl_multi_poll", &api.multi_poll) &&
            Bind(lib, "curl_multi_info_read", &api.multi_info_read);
  if (!ok) return Unsupported(fmt::format("libcurl is too old (no {}): flashpipe needs 7.66 or later", ::dlerror()));
  if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return Internal("curl_global_init failed");
  return Status::Ok();
}

}  // namespace

Status LoadCurl() {
  static std::once_flag once;
  std::call_once(once, [] { loaded = Load(); });
  return loaded;
}

const CurlApi& Curl() { return api; }

}  // namespace flashpipe::fetch
