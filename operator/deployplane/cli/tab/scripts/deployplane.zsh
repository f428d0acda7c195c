#compdef deployplane
compdef _deployplane deployplane

# zsh completion for deployplane                              -*- shell-script -*-
#
# deployplane answers each TAB itself: `deployplane __complete WORDS... CURRENT` prints
# the values that fit, one a line (a tab, then its description), then `:DIRECTIVE`,
# a sum of: 1 error (offer nothing), 2 no space after the value, 4 no file names
# either, 16 directories only. The protocol and this script are cobra's (kubectl, gh),
# Apache-2.0, The Cobra Authors.

_deployplane()
{
    local shellCompDirectiveError=1
    local shellCompDirectiveNoSpace=2
    local shellCompDirectiveNoFileComp=4
    local shellCompDirectiveFilterDirs=16

    local lastParam lastChar flagPrefix requestComp out directive comp lastComp noSpace
    local -a completions

    # the cursor may stand before the end of the line: complete there
    words=("${=words[1,CURRENT]}")
    lastParam=${words[-1]}
    lastChar=${lastParam[-1]}

    # the values of `--flag=value` are offered with the flag before them
    setopt local_options BASH_REMATCH
    if [[ "${lastParam}" =~ '-.*=' ]]; then
        flagPrefix="-P ${BASH_REMATCH}"
    fi

    requestComp="${words[1]} __complete ${words[2,-1]}"
    if [ "${lastChar}" = "" ]; then
        # the last word is complete: ask about the next one, empty so far
        requestComp="${requestComp} \"\""
    fi

    # eval: the words as the shell would pass them (quotes, variables)
    out=$(eval ${requestComp} 2>/dev/null)

    local lastLine
    while IFS='\n' read -r line; do
        lastLine=${line}
    done < <(printf "%s\n" "${out[@]}")

    if [ "${lastLine[1]}" = : ]; then
        directive=${lastLine[2,-1]}
        local suffix
        (( suffix=${#lastLine}+2))
        out=${out[1,-$suffix]}
    else
        directive=0
    fi

    if [ $((directive & shellCompDirectiveError)) -ne 0 ]; then
        return
    fi

    while IFS='\n' read -r comp; do
        if [ -n "$comp" ]; then
            # _describe reads `value:description`: a colon of the value escaped
            comp=${comp//:/\\:}
            local tab="$(printf '\t')"
            comp=${comp//$tab/:}
            completions+=${comp}
            lastComp=$comp
        fi
    done < <(printf "%s\n" "${out[@]}")

    if [ $((directive & shellCompDirectiveNoSpace)) -ne 0 ]; then
        noSpace="-S ''"
    fi

    if [ $((directive & shellCompDirectiveFilterDirs)) -ne 0 ]; then
        _arguments '*:dirname:_files -/'" ${flagPrefix}"
    elif eval _describe "completions" completions $flagPrefix $noSpace; then
        return 0
    elif [ $((directive & shellCompDirectiveNoFileComp)) -ne 0 ]; then
        # nothing, not even file names: zsh may still match in other ways
        return 1
    else
        _arguments '*:filename:_files'" ${flagPrefix}"
    fi
}

# not while the script is being sourced
if [ "$funcstack[1]" = "_deployplane" ]; then
    _deployplane
fi
