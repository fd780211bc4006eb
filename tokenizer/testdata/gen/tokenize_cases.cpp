// tokenize_cases prints llama_tokenize's ids for every case of an .inp file
// (test-tokenizer-0's format: cases separated by "\n__ggml_vocab_test__\n")
// with the given add_special and parse_special: one line per case, ids
// separated by spaces, or "ERR" where llama.cpp throws. It is llama-tokenize
// without its command line, for the flag pairs that tool cannot express
// (add_special differs from the vocabulary's add_bos).
//
//   L=llama.cpp checkout, B=its cmake build (-DBUILD_SHARED_LIBS=OFF)
//   g++ -O1 -std=c++17 -I$L/include -I$L/ggml/include gen/tokenize_cases.cpp \
//       $B/src/libllama.a $B/ggml/src/libggml.a $B/ggml/src/libggml-cpu.a $B/ggml/src/libggml-base.a \
//       -fopenmp -lpthread -o /tmp/tokenize_cases
//   /tmp/tokenize_cases VOCAB.gguf CASES.inp ADD_SPECIAL(0|1) PARSE_SPECIAL(0|1)
#include "llama.h"

#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

static void quiet(ggml_log_level, const char *, void *) {}

int main(int argc, char ** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s VOCAB.gguf CASES.inp ADD_SPECIAL PARSE_SPECIAL\n", argv[0]);
        return 2;
    }
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        std::fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    const llama_vocab * vocab = llama_model_get_vocab(model);
    std::ifstream in(argv[2], std::ios::binary);
    const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const bool add_special = argv[3][0] == '1', parse_special = argv[4][0] == '1';
    const std::string sep = "\n__ggml_vocab_test__\n";
    for (size_t pos = 0; pos < raw.size();) {
        size_t next = raw.find(sep, pos);
        const std::string text = raw.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
        pos = next == std::string::npos ? raw.size() : next + sep.size();
        std::string line;
        try {
            std::vector<llama_token> ids(text.size() + 16);
            int n = llama_tokenize(vocab, text.data(), (int) text.size(), ids.data(), (int) ids.size(), add_special, parse_special);
            if (n < 0) {
                ids.resize(-n);
                n = llama_tokenize(vocab, text.data(), (int) text.size(), ids.data(), (int) ids.size(), add_special, parse_special);
            }
            for (int i = 0; i < n; i++) {
                line += (i ? " " : "") + std::to_string(ids[i]);
            }
        } catch (const std::exception &) {
            line = "ERR";
        }
        std::printf("%s\n", line.c_str());
    }
    llama_model_free(model);
    return 0;
}
