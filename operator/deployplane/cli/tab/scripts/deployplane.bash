# bash completion for deployplane                             -*- shell-script -*-
#
# deployplane answers each TAB itself: `deployplane __complete WORDS... CURRENT` prints
# the values that fit, one a line (a tab, then its description), then `:DIRECTIVE`,
# a sum of: 1 error (offer nothing), 2 no space after the value, 4 no file names
# either, 16 directories only. The protocol and this script are cobra's (kubectl, gh),
# Apache-2.0, The Cobra Authors; bash-completion is used when installed, not needed.

# The words up to the cursor, as typed: bash splits them at COMP_WORDBREAKS, `=` and
# `:` included (`--output=json` is three words); they are joined back where nothing
# separates them on the line (bash-completion's `_get_comp_words_by_ref -n =:`).
__deployplane_init_completion()
{
    COMPREPLY=()
    if declare -F _init_completion >/dev/null 2>&1; then
        _init_completion -n =: || return
        return
    fi
    local rest=${COMP_LINE:0:COMP_POINT} blank word i
    words=()
    for ((i = 0; i <= COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]-}
        blank=${rest%%[![:space:]]*}
        rest=${rest:${#blank}}
        if ((i == COMP_CWORD)); then
            word=$rest
        fi
        if ((i > 0)) && [[ -z $blank ]] &&
            [[ $word == [=:]* || ${words[${#words[@]}-1]} == *[=:] ]]; then
            words[${#words[@]}-1]+=$word
        else
            words+=("$word")
        fi
        rest=${rest:${#word}}
    done
    cword=$((${#words[@]} - 1))
    cur=${words[cword]}
    prev=${words[cword-1]-}
}

__deployplane_get_completion_results()
{
    local requestComp lastParam lastChar args
    # ${words[0]}: deployplane as it was called (a path, an alias)
    args=("${words[@]:1}")
    requestComp="${words[0]} __complete ${args[*]}"
    lastParam=${words[$((${#words[@]}-1))]}
    lastChar=${lastParam:$((${#lastParam}-1)):1}
    if [[ -z ${cur} && ${lastChar} != = ]]; then
        # the last word is complete: ask about the next one, empty so far
        requestComp="${requestComp} ''"
    fi
    # bash completes the value of `--flag=value` alone
    if [[ ${cur} == -*=* ]]; then
        cur="${cur#*=}"
    fi
    # eval: the words as the shell would pass them (quotes, variables)
    out=$(eval "${requestComp}" 2>/dev/null)
    directive=${out##*:}
    out=${out%:*}
    if [[ ${directive} == "${out}" ]]; then
        directive=0
    fi
}

__deployplane_process_completion_results()
{
    local shellCompDirectiveError=1
    local shellCompDirectiveNoSpace=2
    local shellCompDirectiveNoFileComp=4
    local shellCompDirectiveFilterDirs=16

    if (((directive & shellCompDirectiveError) != 0)); then
        return
    fi
    # compopt: bash 4 and later
    if type -t compopt >/dev/null; then
        if (((directive & shellCompDirectiveNoSpace) != 0)); then
            compopt -o nospace
        fi
        if (((directive & shellCompDirectiveNoFileComp) != 0)); then
            compopt +o default
        fi
    fi

    local completions=() comp
    while IFS='' read -r comp; do
        [[ -n $comp ]] && completions+=("$comp")
    done <<<"${out}"

    if (((directive & shellCompDirectiveFilterDirs) != 0)); then
        if declare -F _filedir >/dev/null 2>&1; then
            _filedir -d
        else
            compopt -o filenames 2>/dev/null
            local dir
            while IFS='' read -r dir; do
                COMPREPLY+=("$dir")
            done < <(compgen -d -- "$cur")
        fi
    else
        __deployplane_handle_standard_completion_case
    fi

    __deployplane_handle_special_char "$cur" :
    __deployplane_handle_special_char "$cur" =
}

__deployplane_handle_standard_completion_case()
{
    local tab=$'\t' compline comp longest=0

    (( ${#completions[@]} == 0 )) && return 0

    if [[ ${COMP_TYPE-} == 37 || ${COMP_TYPE-} == 42 || "${completions[*]}" != *$tab* ]]; then
        # the values alone: menu-complete and insert-completions insert them all
        IFS=$'\n' read -ra completions -d '' < <(printf "%q\n" "${completions[@]%%$tab*}")
        IFS=$'\n' read -ra COMPREPLY -d '' < <(IFS=$'\n'; compgen -W "${completions[*]}" -- "${cur}")
        if (( ${#COMPREPLY[@]} == 1 )); then
            COMPREPLY[0]=$(printf "%q" "${COMPREPLY[0]}")
        fi
        return 0
    fi

    for compline in "${completions[@]}"; do
        printf -v comp "%q" "${compline%%$tab*}" &>/dev/null || comp=$(printf "%q" "${compline%%$tab*}")
        [[ $comp == "$cur"* ]] || continue
        COMPREPLY+=("$compline")
        comp=${compline%%$tab*}
        if ((${#comp} > longest)); then
            longest=${#comp}
        fi
    done

    if ((${#COMPREPLY[*]} == 1)); then
        # the one left is inserted: without its description
        COMPREPLY[0]=$(printf "%q" "${COMPREPLY[0]%%$tab*}")
    else
        __deployplane_format_comp_descriptions $longest
    fi
}

# bash replaces the text after the last COMP_WORDBREAKS character: the values lose
# what comes before it (`--output=`, `host:`).
__deployplane_handle_special_char()
{
    local comp="$1"
    local char=$2
    if [[ "$comp" == *${char}* && "${COMP_WORDBREAKS-}" == *${char}* ]]; then
        local word=${comp%"${comp##*${char}}"}
        local idx=${#COMPREPLY[*]}
        while ((--idx >= 0)); do
            COMPREPLY[idx]=${COMPREPLY[idx]#"$word"}
        done
    fi
}

# Each value, then its description in parentheses, cut to the terminal's width.
__deployplane_format_comp_descriptions()
{
    local tab=$'\t'
    local comp desc maxdesclength
    local longest=$1
    local i ci
    for ci in ${!COMPREPLY[*]}; do
        comp=${COMPREPLY[ci]}
        if [[ "$comp" == *$tab* ]]; then
            desc=${comp#*$tab}
            comp=${comp%%$tab*}
            maxdesclength=$(( ${COLUMNS:-0} - longest - 4 ))
            if ((maxdesclength > 8)); then
                for ((i = ${#comp} ; i < longest ; i++)); do
                    comp+=" "
                done
            else
                maxdesclength=$(( ${COLUMNS:-0} - ${#comp} - 4 ))
            fi
            if ((maxdesclength > 0)); then
                if ((${#desc} > maxdesclength)); then
                    desc=${desc:0:$(( maxdesclength - 1 ))}
                    desc+="…"
                fi
                comp+="  ($desc)"
            fi
            COMPREPLY[ci]=$comp
        fi
    done
}

__start_deployplane()
{
    local cur prev words cword split
    COMPREPLY=()
    __deployplane_init_completion || return
    # the cursor may stand before the end of the line: complete there
    words=("${words[@]:0:$cword+1}")
    local out directive
    __deployplane_get_completion_results
    __deployplane_process_completion_results
}

if type -t compopt >/dev/null; then
    complete -o default -F __start_deployplane deployplane
else
    complete -o default -o nospace -F __start_deployplane deployplane
fi
