# Text libraries of the tokenizer.json reader (src/moe/tokenizer/bpe_*.cc, pre_tokenizer.cc):
# PCRE2 runs the pre-tokenizer regexes of Hugging Face tokenizers (Unicode properties,
# look-ahead, as their onig/fancy-regex engines do) and ICU's normalizer gives NFC. Both are
# torch-free, so the fuzz build links them too. scripts/setup.sh installs libpcre2-dev and libicu-dev.
find_package(PkgConfig REQUIRED)
if(NOT TARGET PkgConfig::PCRE2)
  pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET GLOBAL libpcre2-8)
endif()
if(NOT TARGET PkgConfig::ICU_UC)
  pkg_check_modules(ICU_UC REQUIRED IMPORTED_TARGET GLOBAL icu-uc)
endif()
