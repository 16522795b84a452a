// Plain scaled dot-product attention: no positional hooks at all.
#include "../scheme.h"

namespace attngen {
namespace {

class Sdpa : public Scheme {
public:
    std::string name() const override { return "sdpa"; }
};

}  // namespace

ATTNGEN_REGISTER_SCHEME(sdpa, [](const SchemeOptions &) { return std::make_unique<Sdpa>(); })

}  // namespace attngen
