# fish completion for deployplane                             -*- shell-script -*-
#
# deployplane answers each TAB itself: `deployplane __complete WORDS... CURRENT` prints
# the values that fit, one a line (a tab, then its description), then `:DIRECTIVE`,
# a sum of: 1 error (offer nothing), 2 no space after the value, 4 no file names
# either, 16 directories only. The protocol and this script are cobra's (kubectl, gh),
# Apache-2.0, The Cobra Authors.

function __deployplane_perform_completion
    # every word but the one being completed, and that one escaped
    set -l args (commandline -opc)
    set -l lastArg (string escape -- (commandline -ct))
    set -l requestComp "$args[1] __complete $(string join ' ' -- (string escape -- $args[2..-1])) $lastArg"
    set -l results (eval $requestComp 2> /dev/null)

    # lines after the directive, if any, are not the answer's
    for line in $results[-1..1]
        if test (string trim -- $line) = ""
            set results $results[1..-2]
        else
            break
        end
    end

    set -l comps $results[1..-2]
    set -l directiveLine $results[-1]

    # the values of `--flag=value` are offered with the flag before them
    set -l flagPrefix (string match -r -- '-.*=' "$lastArg")

    for comp in $comps
        printf "%s%s\n" "$flagPrefix" "$comp"
    end

    printf "%s\n" "$directiveLine"
end

# Asks deployplane once per TAB: fish evaluates both conditions below.
function __deployplane_perform_completion_once
    if test -n "$__deployplane_perform_completion_once_result"
        return 0
    end
    set --global __deployplane_perform_completion_once_result (__deployplane_perform_completion)
    if test -z "$__deployplane_perform_completion_once_result"
        return 1
    end
    return 0
end

function __deployplane_clear_perform_completion_once_result
    set --erase __deployplane_perform_completion_once_result
end

# Sets __deployplane_comp_results; false when fish should offer file names instead.
function __deployplane_prepare_completions
    set --erase __deployplane_comp_results

    __deployplane_perform_completion_once
    if test -z "$__deployplane_perform_completion_once_result"
        return 1
    end

    set -l directive (string sub --start 2 $__deployplane_perform_completion_once_result[-1])
    set --global __deployplane_comp_results $__deployplane_perform_completion_once_result[1..-2]

    set -l shellCompDirectiveError 1
    set -l shellCompDirectiveNoSpace 2
    set -l shellCompDirectiveNoFileComp 4
    set -l shellCompDirectiveFilterDirs 16

    if test -z "$directive"
        set directive 0
    end

    set -l compErr (math (math --scale 0 $directive / $shellCompDirectiveError) % 2)
    if test $compErr -eq 1
        return 1
    end

    set -l dirfilter (math (math --scale 0 $directive / $shellCompDirectiveFilterDirs) % 2)
    if test $dirfilter -eq 1
        # fish cannot offer directories alone: every file name
        return 1
    end

    set -l nospace (math (math --scale 0 $directive / $shellCompDirectiveNoSpace) % 2)
    set -l nofiles (math (math --scale 0 $directive / $shellCompDirectiveNoFileComp) % 2)

    if test $nospace -ne 0; or test $nofiles -eq 0
        set -l prefix (commandline -t | string escape --style=regex)
        set -l completions (string match -r -- "^$prefix.*" $__deployplane_comp_results)
        set --global __deployplane_comp_results $completions
        set -l numComps (count $__deployplane_comp_results)

        if test $numComps -eq 1; and test $nospace -ne 0
            set -l split (string split --max 1 \t $__deployplane_comp_results[1])
            set -l lastChar (string sub -s -1 -- $split)
            if not string match -r -q "[@=/:.,]" -- "$lastChar"
                # fish adds a space after the one value left, unless offered two
                set --global __deployplane_comp_results $split[1] $split[1].
            end
        end

        if test $numComps -eq 0; and test $nofiles -eq 0
            # nothing to offer, and file names allowed
            return 1
        end
    end

    return 0
end

# Loads whatever completion fish had for deployplane, so that it is replaced below.
if type -q "deployplane"
    complete --do-complete "deployplane " > /dev/null 2>&1
end

complete -c deployplane -e
complete -c deployplane -n '__deployplane_clear_perform_completion_once_result'
complete -c deployplane -n '__deployplane_prepare_completions' -f -a '$__deployplane_comp_results'
