// Codec spec strings: "name" or "name:key=value,key=value" (e.g. "topk:ratio=0.01,ef=0"), in the
// grammar every extension point shares (core/spec.h). The aliases keep codec code short.
#pragma once

#include "core/spec.h"

namespace ferry::compress {

using CodecSpec = ::ferry::Spec;
using SpecReader = ::ferry::SpecReader;

}  // namespace ferry::compress
